"""``paddock init --driver D`` writes a commented config for every driver, and ``paddock config
check`` validates a config and shows each instance's command, home and binary without secrets."""

from __future__ import annotations

import json
import tomllib

import pytest

from paddock.cli import main
from paddock.drivers import BUILT_IN_DRIVERS


@pytest.mark.parametrize("kind", sorted(BUILT_IN_DRIVERS))
def test_init_writes_a_commented_config_that_config_check_reads(kind, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--driver", kind]) == 0
    text = (tmp_path / "paddock.toml").read_text()
    assert text.startswith("# Paddock configuration") and "# endpoint = " in text and "# model = " in text
    table = tomllib.loads(text)["instances"][kind]
    assert table["driver"] == kind
    capsys.readouterr()
    rc = main(["config", "check", "--json"])
    [report] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert report["id"] == kind and report["driver"] == kind and report["home"].endswith(f"instances/{kind}")
    assert rc == (0 if report["ok"] else 1)
    if report["ok"]:
        # Every driver with a command hook shows its command line (opencode has none yet).
        assert report["binary"] and (report["command"] or BUILT_IN_DRIVERS[kind].command is None)
    else:
        assert report["reason"]
    assert not (tmp_path / ".paddock").exists()  # a check creates nothing
    assert main(["init", "--driver", kind]) == 1  # never overwrites without --force


def test_config_check_masks_the_key_and_names_a_bad_key(tmp_path, capsys):
    config = tmp_path / "p.toml"
    config.write_text('[instances.a]\ndriver = "local"\nendpoint = "http://127.0.0.1:9/v1"\napi_key = "sk-never-shown"\n'
                      'model = "m"\nenv = { GATEWAY_TOKEN = "tok-never-shown", REGION = "eu" }\n\n'
                      '[instances.b]\ndriver = "no-such-driver"\n')
    assert main(["config", "check", "--config", str(config), "--state-dir", str(tmp_path / "s")]) == 1
    out = capsys.readouterr().out
    assert "sk-never-shown" not in out and "    api_key:  ***\n" in out
    assert "    endpoint: http://127.0.0.1:9/v1\n" in out  # a space after every label
    assert "    env:      GATEWAY_TOKEN=***, REGION=***\n" in out and "tok-never-shown" not in out and "eu\n" not in out
    assert "ok a (driver local)" in out and "command: " in out and "!! b (driver no-such-driver)" in out
    assert "unknown driver 'no-such-driver'" in out
    config.write_text('[instances.a]\ndriver = "gemini"\ncancel_gard = 1\n')
    assert main(["config", "check", "--config", str(config)]) == 2
    assert "[instances.a]" in capsys.readouterr().err


def test_init_rejects_an_unknown_driver(tmp_path, capsys):
    assert main(["init", "--driver", "nope", "--out", str(tmp_path / "x.toml")]) == 2
    assert "unknown driver 'nope'" in capsys.readouterr().err
