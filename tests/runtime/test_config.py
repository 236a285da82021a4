from __future__ import annotations

import pytest

from paddock._instances._config import load_config
from paddock._instances._isolation import build_env, instance_home
from paddock.contract import ConfigError


def test_none_gives_the_builtin_local_instance():
    cfg = load_config(None)
    assert [(e.instance_id, e.driver) for e in cfg.instances] == [("local", "local")]
    assert cfg.settings.idle_timeout == 1800.0


def test_a_toml_file_is_read(tmp_path):
    path = tmp_path / "paddock.toml"
    path.write_text('[runtime]\nidle_timeout = 5\n[instances.a]\ndriver = "local"\nenv = { X = "1" }\n')
    cfg = load_config(path)
    assert cfg.path == str(path) and cfg.settings.idle_timeout == 5
    assert cfg.instances[0].table == {"driver": "local", "env": {"X": "1"}}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[instances.a\n", "not valid TOML"),
        ("[instances.a]\nbinary = 'x'\n", "[instances.a] key 'driver': required"),
        ("[instances.a]\ndriver = 3\n", "[instances.a] key 'driver'"),
        ("[runtime]\nidle_timeout = 'soon'\n", "[runtime] key 'idle_timeout': Expected `float`, got `str`"),
        ("[runtime]\nresume = 'maybe'\n", "[runtime] key 'resume'"),
        ("[runtime]\nsurprise = 1\n", "[runtime]: Object contains unknown field `surprise`"),
        ("[instance.a]\ndriver='local'\n", "unknown top-level table(s): instance"),
        ('[instances."a b"]\ndriver="local"\n', "[instances.a b]: an instance id"),
    ],
)
def test_errors_name_the_file_table_and_key(tmp_path, text, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_env_is_built_from_an_allow_list_and_strips_credentials(tmp_path):
    ambient = {
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "OPENAI_API_KEY": "sk-secret",
        "ANTHROPIC_API_KEY": "secret",
        "GITHUB_TOKEN": "ghp",
        "MY_SERVICE_TOKEN": "t",
        "RANDOM_THING": "x",
        "HOME": "/root",
    }
    home = instance_home(tmp_path, "a", None)
    env = build_env(home=home, ambient=ambient, configured={"FOO": "bar"})
    assert env["PATH"] == "/usr/bin" and env["LC_ALL"] == "C.UTF-8" and env["FOO"] == "bar"
    assert env["HOME"] == str(home) == str(tmp_path / "instances" / "a")
    assert env["TMPDIR"].startswith(str(home)) and env["XDG_CONFIG_HOME"].startswith(str(home))
    for secret in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_SERVICE_TOKEN", "RANDOM_THING"):
        assert secret not in env


def test_pass_env_and_configured_env_pass_credentials_on_purpose(tmp_path):
    home = instance_home(tmp_path, "a", str(tmp_path / "custom-home"))
    env = build_env(
        home=home,
        ambient={"OPENAI_API_KEY": "sk-1", "PATH": "/bin"},
        pass_env=["OPENAI_API_KEY", "NOT_SET"],
        configured={"ANTHROPIC_API_KEY": "from-config"},
    )
    assert env["OPENAI_API_KEY"] == "sk-1" and env["ANTHROPIC_API_KEY"] == "from-config"
    assert "NOT_SET" not in env and env["HOME"] == str(tmp_path / "custom-home")
