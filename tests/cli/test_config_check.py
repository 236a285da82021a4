"""Config validation and ``paddock config check`` (issue #24): a timeout of zero or less is
refused naming its key, an empty config warns, a removed key says why, and the check starts no
process unless asked for versions."""

from __future__ import annotations

import time

import pytest

from tests.cli.conftest import cli

pytestmark = pytest.mark.timeout(120)


def _check(short_root, text: str, *extra: str):
    config = short_root / "paddock.toml"
    config.write_text(text)
    return cli("config", "check", "--config", str(config), "--state-dir", str(short_root / "state"), *extra)


@pytest.mark.parametrize(("table", "key", "value"), [
    ("runtime", "idle_timeout", "-5"),
    ("runtime", "stall_warning", "0"),
    ("instances.a", "request_timeout", "0"),
    ("instances.a", "start_timeout", "-0.5"),
])
def test_a_timeout_of_zero_or_less_is_refused_naming_its_key(short_root, table, key, value):
    body = '[instances.a]\ndriver = "local"\n'
    text = f"[runtime]\n{key} = {value}\n\n{body}" if table == "runtime" else body + f"{key} = {value}\n"
    r = _check(short_root, text)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"[{table}] key '{key}': must be a positive number of seconds, got {value}" in r.stderr, r.stderr


def test_an_empty_config_warns_and_a_removed_key_says_why(short_root):
    r = _check(short_root, "# nothing yet\n")
    assert "configures no instance: add an [instances.<id>] table" in r.stderr, r.stderr
    r = _check(short_root, '[runtime]\nraw_events = true\n\n[instances.a]\ndriver = "local"\n')
    assert r.returncode == 2
    assert "[runtime] key 'raw_events': removed; native payloads are not attached to events" in r.stderr
    assert "delete the line" in r.stderr
    r = _check(short_root, '[runtime]\nstall_warning = false\n\n[instances.a]\ndriver = "local"\n')
    assert r.returncode == 0, r.stderr  # false turns the watchdog off; it is not a timeout of 0


def test_config_check_starts_no_process_unless_asked_for_versions(short_root):
    marker = short_root / "ran"
    fake = short_root / "fake-codex"
    fake.write_text(f"#!/bin/sh\necho started >> {marker}\necho 'codex-cli 0.0.0'\n")
    fake.chmod(0o755)
    text = "".join(f'[instances.c{i}]\ndriver = "codex"\nbinary = "{fake}"\napi_key = "sk-x"\n\n' for i in range(9))
    started = time.monotonic()
    r = _check(short_root, text)
    seconds = time.monotonic() - started
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok c") == 9 and f"binary:   {fake}" in r.stdout
    assert not marker.exists(), "config check started the agent"
    assert seconds < 15, seconds
    r = _check(short_root, text, "--versions")
    assert r.returncode == 0 and marker.exists()
    assert len(marker.read_text().splitlines()) == 9  # one --version per instance, no more
