"""``paddock doctor`` checks what it reports (issue #24): the model endpoint answers (TCP and
HTTP), credentials are present (never printed), and the agent is logged in where it says."""

from __future__ import annotations

import os

import pytest

from paddock.testing import ModelServer

from tests.cli.conftest import cli
from tests.live.conftest import require_peer

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-doctor-never-printed-4711"


def test_doctor_says_which_endpoint_does_not_answer_and_exits_1(short_root):
    with ModelServer() as server:
        config = short_root / "paddock.toml"
        config.write_text(f"""
[instances.alive]
driver = "local"
endpoint = "{server.url}"

[instances.dead]
driver = "local"
endpoint = "http://127.0.0.1:9"
api_key = "{SECRET}"
""")
        r = cli("doctor", "--config", str(config), "--state-dir", str(short_root / "state"))
    assert r.returncode == 1, r.stdout + r.stderr
    alive, dead = r.stdout.split("!! dead")
    assert alive.startswith("ok alive") and "endpoint check: reachable (TCP 127.0.0.1:" in alive and "HTTP " in alive
    assert "problem: the model endpoint http://127.0.0.1:9 does not answer" in dead
    assert "TCP 127.0.0.1:9" in dead
    assert SECRET not in r.stdout + r.stderr
    as_json = cli("doctor", "--json", "--config", str(config), "--state-dir", str(short_root / "state"))
    assert SECRET not in as_json.stdout


@pytest.mark.live
def test_doctor_reports_claudes_login_and_flags_no_credentials(short_root):
    require_peer("claude")
    config = short_root / "paddock.toml"
    config.write_text(f"""
[instances.no-login]
driver = "claude"

[instances.keyed]
driver = "claude"
api_key = "{SECRET}"
""")
    environ = dict(os.environ)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "PADDOCK_CONFIG", "PADDOCK_STATE_DIR"):
        environ.pop(name, None)
    r = cli("doctor", "--config", str(config), "--state-dir", str(short_root / "state"), environ=environ)
    assert r.returncode == 1, r.stdout + r.stderr
    no_login, keyed = r.stdout.split("ok keyed") if "ok keyed" in r.stdout else (r.stdout, "")
    assert no_login.startswith("!! no-login") and "login: not logged in" in no_login
    assert "problem: no credentials and the agent is not logged in" in no_login
    assert "login: logged in (api_key from ANTHROPIC_API_KEY)" in keyed and "credentials: api_key in the config" in keyed
    assert SECRET not in r.stdout + r.stderr


def test_doctor_says_which_limits_an_instance_has_and_what_enforces_them(short_root):
    config = short_root / "paddock.toml"
    config.write_text("""
[instances.small]
driver = "local"
limits = { memory_mb = 256, processes = 50 }

[instances.free]
driver = "local"
""")
    r = cli("doctor", "--config", str(config), "--state-dir", str(short_root / "state"))
    small, free = r.stdout.split(" free (driver")
    assert "limits: memory_mb = 256, processes = 50: enforced by the shim's tree watch (cgroup: " in small, r.stdout
    assert "limits:" not in free
