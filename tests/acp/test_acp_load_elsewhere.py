"""`session/load` of a session started in another folder (trial4): ACP's `cwd` is the
editor's, so the tools work there from now on, but the editor is told so (a note as an
`agent_message_chunk`, as `tether run --resume` notes it on stderr), and the replayed tool calls
keep the paths they had where they ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.acp import AcpPipe, acp_project
from kit.faultserver import text, tool


def test_load_in_another_folder_says_so_and_replays_the_paths_as_they_were(
    tmp_path: Path,
) -> None:
    script = [tool("write", path="sp ace.txt", content="hi\n"), text("wrote it"), text("here")]
    with acp_project(tmp_path, script) as project:
        first, other = project.work / "first", project.work / "other"
        first.mkdir()
        other.mkdir()
        with AcpPipe(project) as pipe:
            sid = pipe.start(first)
            write = [{"type": "text", "text": "write it"}]
            reply = pipe.call("session/prompt", {"sessionId": sid, "prompt": write})
            assert reply["result"]["stopReason"] == "end_turn", reply
        assert (first / "sp ace.txt").read_text() == "hi\n"

        with AcpPipe(project) as pipe:
            pipe.start(project.work)
            pipe.updates.clear()
            load: dict[str, Any] = {"sessionId": sid, "cwd": str(other), "mcpServers": []}
            assert "result" in pipe.call("session/load", load)
            calls = [u for u in pipe.updates if u["sessionUpdate"] == "tool_call"]
            locations: list[dict[str, Any]] = []
            for u in calls:
                locations += u.get("locations") or []
            located = [loc["path"] for loc in locations]
            assert located == [str(first / "sp ace.txt")]
            said = "".join(
                u["content"]["text"]
                for u in pipe.updates
                if u["sessionUpdate"] == "agent_message_chunk"
            )
            assert f"session {sid} was started in {first}; tools now work in {other}" in said
            # the note comes after the replay: the last thing before the editor's prompt box
            assert pipe.updates[-1]["sessionUpdate"] == "agent_message_chunk"
            assert "tools now work in" in pipe.updates[-1]["content"]["text"]
