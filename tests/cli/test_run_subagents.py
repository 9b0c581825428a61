"""`tether run` offers `task`: a child's events reach stdout tagged with the agent path, its
session is created beside the main one (header naming the caller), and `tether run --resume
CHILD_ID` resumes it on its own; a project's hooks refuse a prompt (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, Step, text
from tether.session import SessionStore


def test_task_through_tether_run_and_resume_the_child(tmp_path: Path) -> None:
    home = tmp_path / "home"
    task_call = Step("tool", tool_name="task", tool_args=json.dumps({"name": "sub", "prompt": "job"}))
    script = [task_call, text("child answer"), text("final")]
    with FaultServer(script) as server:
        base = ["--model", "openai/m", "--base-url", server.openai_url]
        proc = run_cli(["run", *base, "--session", "s1", "go"], home)
        assert proc.returncode == 0, proc.stderr
        out = jsonl(proc.stdout)
        tagged = [e for e in out if e["type"] == "subagent"]
        assert tagged and {tuple(e["agent_path"]) for e in tagged} == {("main", "task:call_1")}
        assert tagged[0]["event"]["type"] == "session_start"
        [result] = [e for e in out if e["type"] == "tool_result"]
        assert result["content"] == "child answer"
        child_id = result["display"]["session_id"]
        [done] = [e for e in out if e["type"] == "done"]
        assert done["children_usage"] is not None
        store = SessionStore(home / "sessions")
        header = store.load(child_id).header
        assert (header.caller_session, header.caller_tool_call) == ("s1", "call_1")
        # the task call's request offered the tool
        offered = [t["function"]["name"] for t in server.requests[0]["body"]["tools"]]
        assert "task" in offered

    with FaultServer([text("resumed child")]) as server:
        base = ["--model", "openai/m", "--base-url", server.openai_url]
        proc = run_cli(["run", *base, "--resume", child_id, "go on"], home)
        assert proc.returncode == 0, proc.stderr
        sent = server.requests[0]["body"]["messages"]
        assert [m["role"] for m in sent if m["role"] != "system"] == [
            "user",
            "assistant",
            "user",
        ]
        assert sent[-1]["content"] in ("go on", [{"type": "text", "text": "go on"}])
    turns = SessionStore(home / "sessions").load(child_id).turns
    assert [t.text for t in turns][-1] == "resumed child"


def test_a_trusted_projects_user_prompt_hook_refuses_the_prompt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    (work / ".tether").mkdir(parents=True)
    hooks = {"hooks": {"user_prompt": [{"command": "echo 'not today' >&2; exit 2"}]}}
    (work / ".tether" / "settings.json").write_text(json.dumps(hooks))
    with FaultServer([text("never sent")]) as server:
        base = ["--model", "openai/m", "--base-url", server.openai_url, "--no-session"]
        untrusted = run_cli(["run", *base, "hi"], home)  # not approved: its hooks do not load
        assert untrusted.returncode == 0, untrusted.stderr
        assert run_cli(["trust"], home).returncode == 0
        proc = run_cli(["run", *base, "hi"], home)
        assert proc.returncode == 1
        assert "user_prompt hook refused" in proc.stderr
        assert len(server.requests) == 1  # only the untrusted run's request
        assert any(e["type"] == "warning" and "not today" in e["message"] for e in jsonl(proc.stdout))


def test_a_user_prompt_hooks_reason_is_said_in_text_format(tmp_path: Path) -> None:
    """trial5: stderr said only `stopped: a user_prompt hook refused the prompt`, not why."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    (work / ".tether").mkdir(parents=True)
    refuse = "echo 'prompt contains a password' >&2; exit 2"
    (work / ".tether" / "settings.json").write_text(
        json.dumps({"hooks": {"user_prompt": [{"command": refuse}]}})
    )
    with FaultServer([text("never sent")]) as server:
        base = ["--model", "openai/m", "--base-url", server.openai_url, "--no-session"]
        assert run_cli(["trust"], home).returncode == 0
        proc = run_cli(["run", "--output-format", "text", *base, "hi"], home)
        assert proc.returncode == 1
        assert "prompt contains a password" in proc.stderr
        assert server.requests == []
