"""The scripted model server's documentation holds (issue #24): the examples in docs/mock-model.md
are valid scripts with one step of every kind, and ``paddock mock-model --help`` names each kind."""

from __future__ import annotations

import json
import re
import tomllib
import typing

from paddock.testing import parse_script
from paddock.testing._scenario import Step

from tests.cli.conftest import ROOT, cli

KINDS = {cls.__struct_config__.tag for cls in typing.get_args(Step)}


def _blocks(language: str) -> list[str]:
    text = (ROOT / "docs" / "mock-model.md").read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_documented_scripts_parse_and_show_every_step_kind():
    [config, script] = _blocks("toml")
    parsed = parse_script(tomllib.loads(script))
    assert {step.__struct_config__.tag for steps in parsed.scenarios.values() for step in steps} == KINDS
    assert parsed.default == "greet"
    [as_json] = _blocks("json")
    assert parse_script(json.loads(as_json)).scenarios["touch"][0].command == "touch a.txt"
    instances = tomllib.loads(config)["instances"]
    assert {table["driver"] for table in instances.values()} == {"claude", "codex", "gemini", "opencode"}


def test_mock_model_help_names_every_step_kind_and_the_marker():
    r = cli("mock-model", "--help")
    assert r.returncode == 0
    for kind in KINDS:
        assert f'type = "{kind}"' in r.stdout, kind
    assert "SCENARIO:<name>" in r.stdout and "docs/mock-model.md" in r.stdout
