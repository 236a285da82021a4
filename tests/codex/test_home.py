"""CODEX_HOME per instance, the generated config.toml, and the shadow-home rules."""

from __future__ import annotations

import os
import stat
import tomllib

import pytest

from paddock.contract import ConfigError, deep_merge
from paddock.drivers.codex._home import (
    API_KEY_VAR,
    OFFLINE_SAFE,
    SHARED_ENTRIES,
    build_config,
    check_shadow,
    prepare_home,
    write_config,
)
from paddock.drivers._toml import dumps


def test_private_home_is_0700(tmp_path):
    home = prepare_home(tmp_path / "i1" / "codex")
    assert home.is_dir() and stat.S_IMODE(home.stat().st_mode) == 0o700


def test_config_maps_the_common_keys_and_stays_offline_safe(tmp_path):
    data = build_config(endpoint="http://127.0.0.1:9/v1", has_key=True, model="m1", sqlite_home=None, overrides={})
    path = write_config(prepare_home(tmp_path / "c"), data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    parsed = tomllib.loads(path.read_text())
    assert parsed["model"] == "m1" and parsed["model_provider"] == "paddock"
    assert parsed["model_providers"]["paddock"] == {
        "name": "paddock", "base_url": "http://127.0.0.1:9/v1", "wire_api": "responses",
        "requires_openai_auth": False, "env_key": API_KEY_VAR,
    }
    assert parsed["features"] == {"plugins": False, "remote_plugin": False, "apps": False}
    assert parsed["analytics"] == {"enabled": False} and parsed["check_for_update_on_startup"] is False
    assert "paddock-mock" not in path.read_text()  # the key itself never goes into the file


def test_offline_defaults_can_be_overridden(tmp_path):
    data = build_config(endpoint=None, has_key=False, model=None, sqlite_home=None,
                        overrides={"features": {"plugins": True}, "analytics": {"enabled": True}, "x": [1, "a"]})
    parsed = tomllib.loads(dumps(data))
    assert parsed["features"] == {"plugins": True, "remote_plugin": False, "apps": False}
    assert parsed["analytics"]["enabled"] is True and parsed["x"] == [1, "a"]
    assert "model_providers" not in parsed and "model" not in parsed
    assert OFFLINE_SAFE["features"]["plugins"] is False  # the defaults themselves are untouched


def test_toml_writer_quotes_keys_and_strings():
    text = dumps({"a b": "q\"uote", "t": {"n": 1.5, "deep": {"ok": True}}, "inline": [{"k": "v"}]})
    assert tomllib.loads(text) == {"a b": 'q"uote', "t": {"n": 1.5, "deep": {"ok": True}}, "inline": [{"k": "v"}]}
    assert deep_merge({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}, "d": 4}) == {"a": {"b": 3, "c": 2}, "d": 4}


def test_shadow_home_links_shared_state_and_keeps_credentials_private(tmp_path):
    main, shadow = tmp_path / "main", tmp_path / "shadow"
    (main / "sessions").mkdir(parents=True)
    (main / "auth.json").write_text('{"main": true}')
    prepare_home(shadow, main)
    for name in SHARED_ENTRIES:
        assert (shadow / name).is_symlink() and os.readlink(shadow / name) == str(main / name)
        assert (main / name).is_dir()
    (shadow / "auth.json").write_text('{"shadow": true}')
    (shadow / "sessions" / "rollout.jsonl").write_text("x")
    assert (main / "sessions" / "rollout.jsonl").read_text() == "x"  # shared
    assert (main / "auth.json").read_text() == '{"main": true}'  # private
    prepare_home(shadow, main)  # idempotent
    assert sorted(p.name for p in shadow.iterdir()) == sorted([*SHARED_ENTRIES, "auth.json"])


def test_wrong_links_are_repointed(tmp_path):
    main, shadow, elsewhere = tmp_path / "main", tmp_path / "shadow", tmp_path / "elsewhere"
    elsewhere.mkdir()
    shadow.mkdir()
    (shadow / "skills").symlink_to(elsewhere)
    (shadow / "cache").symlink_to(tmp_path / "dangling")
    (shadow / "models_cache.json").symlink_to(main / "models_cache.json")
    prepare_home(shadow, main)
    assert os.readlink(shadow / "skills") == str(main / "skills")
    assert os.readlink(shadow / "cache") == str(main / "cache")
    assert not (shadow / "models_cache.json").exists()
    prepare_home(shadow, main)
    assert os.readlink(shadow / "skills") == str(main / "skills")


def test_shadow_equal_to_the_main_home_is_refused(tmp_path):
    main = tmp_path / "main"
    main.mkdir()
    with pytest.raises(ConfigError, match="the main home itself"):
        prepare_home(main, main)
    (tmp_path / "alias").symlink_to(main)
    with pytest.raises(ConfigError, match="the main home itself"):
        prepare_home(tmp_path / "alias", main)
    with pytest.raises(ConfigError, match="inside the main home"):
        prepare_home(main / "sub", main)


def test_a_real_folder_where_a_link_belongs_is_refused(tmp_path):
    main, shadow = tmp_path / "main", tmp_path / "shadow"
    (shadow / "sessions").mkdir(parents=True)
    with pytest.raises(ConfigError, match="a real folder where a link") as info:
        prepare_home(shadow, main)
    assert info.value.path == str(shadow / "sessions")
    (shadow / "sessions").rmdir()
    (shadow / "log").write_text("not a folder")
    with pytest.raises(ConfigError, match="a real file where a link"):
        check_shadow(shadow, main)


def test_a_symlinked_auth_json_is_refused(tmp_path):
    main, shadow = tmp_path / "main", tmp_path / "shadow"
    main.mkdir()
    shadow.mkdir()
    (main / "auth.json").write_text("{}")
    (shadow / "auth.json").symlink_to(main / "auth.json")
    with pytest.raises(ConfigError, match="auth.json of a shadow home is a symlink"):
        prepare_home(shadow, main)
    assert not (shadow / "sessions").exists()  # refused before anything changed
