"""What a request approves (issue #24), unit by unit: the shared subject builders, and the ACP
permission requests recorded from every pinned flavor (tests/recordings/acp) turned into
subjects by the ACP driver's own translation."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from paddock.contract import DIFF_CHARS, CommandSubject, FileChangeSubject, ToolSubject
from paddock.drivers._subjects import codex_changes, edit, input_subject, patch, tool_subject, written
from paddock.drivers.acp import _wire as w
from paddock.drivers.acp._permissions import request_kind_of_tool
from paddock.drivers.acp._subjects import permission_subject

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings" / "acp"


def test_a_long_diff_is_cut_and_says_so():
    long = "".join(f"line {i}\n" for i in range(5000))
    cut = edit("/w/big.txt", None, long)
    assert cut.change == "add" and cut.truncated and len(cut.diff) == DIFF_CHARS
    assert cut.diff.startswith("--- /dev/null\n+++ /w/big.txt\n")
    assert not patch("/w/a", "@@ -1 +1 @@\n-a\n+b\n").truncated


def test_a_whole_content_write_is_diffed_against_the_file_on_disk(tmp_path):
    (tmp_path / "old.txt").write_text("keep\nold\n")
    changed = written("old.txt", "keep\nnew\n", str(tmp_path))
    assert changed.path == str(tmp_path / "old.txt") and changed.change == "update"
    assert "-old\n" in changed.diff and "+new\n" in changed.diff and " keep\n" in changed.diff
    created = written("new.txt", "fresh\n", str(tmp_path))
    assert created.change == "add" and "+fresh\n" in created.diff


def test_tool_inputs_of_each_shape():
    assert input_subject("command", "Bash", {"command": "ls -la", "description": "list"}, "/w") == \
        CommandSubject(command="ls -la", cwd="/w")
    assert input_subject("command", "exec", {"cmd": ["bash", "-lc", "echo 'a b'"], "workdir": "/x"}, "/w") == \
        CommandSubject(command="bash -lc 'echo '\"'\"'a b'\"'\"''", cwd="/x")
    edited = input_subject("file_change", "Edit", {"file_path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}, "/w")
    assert isinstance(edited, FileChangeSubject) and edited.files[0].path == "/w/src/a.py"
    assert "-x = 1" in edited.files[0].diff and "+x = 2" in edited.files[0].diff
    multi = input_subject("file_change", "MultiEdit", {"file_path": "/w/b.py", "edits": [
        {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]}, "/w")
    assert isinstance(multi, FileChangeSubject) and len(multi.files) == 2
    assert tool_subject("mcp__github__create_issue", {"title": "t"}) == \
        ToolSubject(tool="create_issue", server="github", arguments={"title": "t"})
    assert input_subject("tool", "WebFetch", {"url": "https://example.org"}, "/w") == \
        ToolSubject(tool="WebFetch", arguments={"url": "https://example.org"})


def test_codex_change_maps_add_update_delete_and_move():
    files = codex_changes({
        "/w/new.txt": {"type": "add", "content": "hello\n"},
        "/w/gone.txt": {"type": "delete", "content": "bye\n"},
        "/w/moved.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n", "move_path": "/w/there.txt"},
    })
    assert [(f.path, f.change) for f in files] == [("/w/new.txt", "add"), ("/w/gone.txt", "delete"), ("/w/moved.txt", "move")]
    assert "+hello" in files[0].diff and "-bye" in files[1].diff and files[2].move_to == "/w/there.txt"


def _recorded_permissions() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(RECORDINGS.rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            frame = json.loads(line)
            msg = frame.get("msg") if isinstance(frame, dict) else None
            if isinstance(msg, dict) and msg.get("method") == "session/request_permission":
                out.append((path.stem, msg["params"]))
    return out


PERMISSIONS = _recorded_permissions()


@pytest.mark.parametrize(("source", "params"), PERMISSIONS, ids=[f"{s}-{i}" for i, (s, _) in enumerate(PERMISSIONS)])
def test_every_recorded_permission_request_says_what_it_approves(source, params):
    call = msgspec.convert(params["toolCall"], w.ToolCallFields)
    kind = request_kind_of_tool(call.kind)
    subject = permission_subject(kind, call, "/w", title_is_command="gemini" in source)
    if kind == "command":
        assert isinstance(subject, CommandSubject) and "touch" in subject.command, subject
    elif kind == "file_change":
        assert isinstance(subject, FileChangeSubject), subject
        assert all(f.path.endswith(".txt") and f.diff and "+" in f.diff for f in subject.files), subject
    else:
        assert subject is not None


def test_the_recordings_hold_commands_and_edits():
    kinds = {request_kind_of_tool(params["toolCall"].get("kind")) for _, params in PERMISSIONS}
    assert {"command", "file_change"} <= kinds


def test_a_new_file_is_an_add_where_the_agent_says_so_or_the_disk_does(tmp_path):
    """Gemini, OpenCode and Copilot ask before they create a file, each in its own words: an
    empty ``oldText`` (Gemini, Qwen), a diff from nothing (OpenCode's write), git's create header
    (Copilot, as recorded). A new file is ``add``; the same words for a file on disk are ``update``."""
    new, there = str(tmp_path / "new.txt"), tmp_path / "there.txt"
    there.write_text("")
    acp = w.ToolCallFields(toolCallId="c1", kind="edit",
                           content=[{"type": "diff", "path": new, "oldText": "", "newText": "hi\n"}])
    [created] = permission_subject("file_change", acp, str(tmp_path)).files
    assert created.change == "add"
    acp_there = w.ToolCallFields(toolCallId="c2", kind="edit",
                                 content=[{"type": "diff", "path": str(there), "oldText": "", "newText": "hi\n"}])
    assert permission_subject("file_change", acp_there, str(tmp_path)).files[0].change == "update"
    from_nothing = "Index: {0}\n===\n--- {0}\n+++ {0}\n@@ -0,0 +1,1 @@\n+hi\n"
    assert input_subject("file_change", "edit", {"filepath": new, "diff": from_nothing.format(new)}, None).files[0].change == "add"
    assert input_subject("file_change", "edit", {"filepath": str(there), "diff": from_nothing.format(there)},
                         None).files[0].change == "update"
    copilot = [params for source, params in PERMISSIONS if "copilot" in source
               and "create file mode" in json.dumps(params["toolCall"].get("rawInput"))]
    assert copilot, "the copilot recordings hold a created file"
    for params in copilot:
        call = msgspec.convert(params["toolCall"], w.ToolCallFields)
        assert [f.change for f in permission_subject("file_change", call, "/w").files] == ["add"]
    assert input_subject("file_change", "edit", {"old_string": "", "new_string": "x", "file_path": new}, None).files[0].change == "add"
    assert patch("/w/gone.txt", "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n").change == "delete"
    assert patch("/w/a", "@@ -1 +1 @@\n-a\n+b\n").change == "update"
