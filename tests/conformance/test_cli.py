"""``paddock conformance`` as a user runs it: a fresh folder, no config, a throwaway HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SECRET = "sk-conformance-cli-credential-0123456789"

pytestmark = pytest.mark.timeout(180)


def _run(tmp_path, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           **{k: v for k, v in (extra_env or {}).items() if v}}
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "paddock.cli", "conformance", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=170)


def test_local_json_passes_every_case_it_declares_with_no_config(tmp_path):
    run = _run(tmp_path, "--driver", "local", "--json")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [driver] = json.loads(run.stdout)["drivers"]
    assert driver["driver"] == "local" and driver["digest"].startswith("blake2b-256:")
    results = {c["scenario"]: (c["result"], c["reason"]) for c in driver["cases"]}
    assert all(r in ("pass", "n/a") for r, _ in results.values()), results
    assert results["06-steer"] == ("n/a", "turns.steer is off")
    assert sorted(os.listdir(tmp_path)) == ["home"]  # its state dir was temporary, nothing left here


def test_the_table_names_each_n_a_reason(tmp_path):
    run = _run(tmp_path, "--scenario", "01-simple-turn", "--scenario", "06-steer")
    assert run.returncode == 0, run.stderr[-2000:]
    header, row = run.stdout.splitlines()[:2]
    assert header.split() == ["driver", "01", "06"]
    assert row.split() == ["local", "pass", "n/a"]
    assert "local 06-steer: n/a: turns.steer is off" in run.stdout


def test_a_configured_instance_with_a_key_prints_no_key(tmp_path):
    config = tmp_path / "paddock.toml"
    config.write_text(f'[instances.mine]\ndriver = "local"\napi_key = "{SECRET}"\n')
    run = _run(tmp_path, "--instance", "mine", "--config", str(config), "--scenario", "01-simple-turn",
               "--scenario", "13-unknown-request")
    assert SECRET not in run.stdout + run.stderr
    json_run = _run(tmp_path, "--instance", "mine", "--config", str(config), "--scenario", "13-unknown-request",
                    "--json")
    assert json_run.returncode == 0, json_run.stderr[-2000:]
    assert SECRET not in json_run.stdout + json_run.stderr
    [driver] = json.loads(json_run.stdout)["drivers"]
    assert driver["corpus"] == "local-agent-directives"  # a local instance follows the directives


def test_a_configured_local_instance_passes_offline(tmp_path):
    """``--instance`` on a ``local`` instance uses the local agent's directives, as ``--driver local``
    does (plain-language prompts fail: the local agent follows no instructions)."""
    config = tmp_path / "paddock.toml"
    config.write_text('[instances.local]\ndriver = "local"\n')
    run = _run(tmp_path, "--instance", "local", "--config", str(config), "--json")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [driver] = json.loads(run.stdout)["drivers"]
    results = {c["scenario"]: (c["result"], c["reason"]) for c in driver["cases"]}
    assert all(r in ("pass", "n/a") for r, _ in results.values()), results
    assert sum(r == "pass" for r, _ in results.values()) >= 19, results


@pytest.mark.live
@pytest.mark.timeout(300)
def test_an_instance_on_the_documented_mock_model_setup_passes(tmp_path):
    """docs/mock-model.md's Codex instance, its endpoint a running ``paddock mock-model``: the
    command recognises the scripted model server and runs the suite against one of its own,
    started with the suite's script (a model that follows the scenarios)."""
    from paddock.drivers._peers import default_peers_dir, load_pins, peer_argv
    from paddock.testing import ModelServer

    pin = load_pins()["codex"]
    if peer_argv(pin) is None:
        pytest.skip(f"{pin.package}@{pin.version} is not installed; install with: paddock peers install")
    with ModelServer() as mock:
        config = tmp_path / "paddock.toml"
        config.write_text(f'[instances.codex]\ndriver = "codex"\nendpoint = "{mock.url}"\napi_key = "sk-anything"\n'
                          f'model = "gpt-5.4-mini"\n')
        env = {"PADDOCK_PEERS_DIR": str(default_peers_dir())}  # its HOME is a throwaway one
        run = _run(tmp_path, "--instance", "codex", "--config", str(config), extra_env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "scripted model server started for this run" in run.stderr
    assert "fail" not in run.stdout.splitlines()[1], run.stdout
