"""`tether replay` (issue 16): every transcript in tests/fixtures/transcripts and sessions the
tests record, replayed to every target with 0 contract violations; tools re-run in a scratch
copy give no difference when nothing changed and show one when the folder changed; a
deliberately broken session shows its repairs; the checker itself catches a broken request."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from kit.cases import CASES_DIR
from kit.cli import Completed, run_cli
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import TARGETS, Target, TextBlock, Turn, text_turn, tool_result
from tether.providers.base import ModelRequest
from tether.replay import checker, replay_run, replay_stored, split_segments
from tether.session import SessionStore
from tether.session.transcripts import import_transcript
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools

TRANSCRIPTS = sorted((CASES_DIR.parent / "fixtures" / "transcripts").iterdir())
FORMATS = {
    "claude-code-orchestrator-long.jsonl": "claude-code",
    "claude-code-subagents-medium.jsonl": "claude-code",
    "codex-rollout-session-head.jsonl": "codex",
    "mini-swe-agent-github-issue.traj.json": "mini-swe-agent",
    "openhands-2048-claude.json": "openhands",
    "openhands-chat-gpt4o.json": "openhands",
    "swe-agent-marshmallow-function-calling.traj": "swe-agent",
    "swe-agent-pydicom-gpt4.traj": "swe-agent",
}


def tether(args: list[str], home: Path, cwd: Path) -> Completed:
    return run_cli(["replay", *args], home, cwd=cwd)


def findings(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_every_transcript_format_is_imported() -> None:
    assert {p.name for p in TRANSCRIPTS} == set(FORMATS)
    for path in TRANSCRIPTS:
        t = import_transcript(path)
        assert t.format == FORMATS[path.name]
        assert any(x.role == "user" for x in t.turns)
    calls = import_transcript(TRANSCRIPTS[-2]).turns  # swe-agent with function calling
    assert sum(len(t.tool_calls) for t in calls) == sum(len(t.tool_results) for t in calls) > 5


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_every_transcript_replays_to_every_target_without_violations(
    path: Path, target: Target
) -> None:
    turns = import_transcript(path).turns
    snapshot = repr(turns)
    assistant_turns = sum(1 for t in turns if t.role == "assistant")
    report = replay_stored(turns, target)
    assert report.count("violation") == 0, report.findings
    assert report.requests == assistant_turns - (turns[0].role == "assistant")
    assert repr(turns) == snapshot  # the stored turns are never changed


def test_the_cli_replays_a_transcript(tmp_path: Path) -> None:
    path = next(p for p in TRANSCRIPTS if p.name.startswith("swe-agent-marshmallow"))
    r = tether([str(path), "--target", "google", "--target", "anthropic"], tmp_path, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert "google (tools stored): 11 requests, 0 violations, 0 repairs" in r.stderr
    assert "anthropic (tools stored): 11 requests" in r.stderr
    r = tether([str(path), "--tools", "run"], tmp_path, tmp_path)
    assert r.returncode == 1 and "use --tools stored" in r.stderr
    r = tether([str(path), "--target", "bedrock"], tmp_path, tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "unknown --target" in r.stderr
    for missing in ("/nonexistent.jsonl", "gone/run.traj", "nothing.json"):
        r = tether([missing], tmp_path, tmp_path)
        assert r.returncode == 1 and r.stderr == f"tether: no file {missing}\n", r.stderr


def _record(home: Path, work: Path) -> str:
    """A real session: the agent writes, reads and greps files in `work` (recorded)."""
    (work / "notes.txt").write_text("alpha\nbeta\n")
    store = SessionStore(home / "sessions")
    writer = store.create(cwd=str(work))
    provider = ScriptedProvider(
        [
            call("read", path="notes.txt"),
            call("write", path="out.txt", content="gamma\n"),
            call("grep", pattern="a", path="."),
            "Read notes, wrote out.txt.",
            call("ls", path="."),
            "Listed.",
        ]
    )
    agent = Agent(
        provider,
        tools=builtin_tools(),
        root=work,
        session=AgentSession(sink=writer),
        runtime=deterministic(id_prefix="rec"),
        compaction=False,
    )
    agent.run_sync("Read notes.txt, write out.txt, grep for a.")
    agent.run_sync("Now list the folder.")
    # the recording leaves the folder as it was before the run, as a user would replay it
    (work / "out.txt").unlink()
    return writer.id


def test_recorded_sessions_replay_to_every_target_with_tools_rerun(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    sid = _record(home, work)
    r = tether([sid], home, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""
    for target in TARGETS:
        assert (
            f"→ {target} (tools run): 6 requests, 0 violations, 0 repairs, 0 differences"
            in r.stderr
        )
    assert not (work / "out.txt").exists()  # the tools ran in a scratch copy
    r = tether([sid, "--tools", "stored", "--from", "4"], home, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "openai-chat (tools stored): 3 requests, 0 violations" in r.stderr


def test_a_changed_folder_shows_the_difference(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    sid = _record(home, work)
    (work / "notes.txt").write_text("alpha\nCHANGED\n")
    r = tether([sid, "--target", "openai-responses"], home, tmp_path)
    assert r.returncode == 1, r.stderr
    diffs = [f for f in findings(r.stdout) if f["kind"] == "difference"]
    assert diffs and all(f["kind"] == "difference" for f in findings(r.stdout))
    read = [d for d in diffs if "(read)" in str(d["detail"])]
    assert len(read) == 1 and "CHANGED" in str(read[0]["detail"])
    assert "0 violations, 0 repairs" in r.stderr


def _broken_session(home: Path, work: Path) -> str:
    """A session as a crash and a hand edit leave it: a call without a result followed by new
    user text, a result answering no call, a duplicated call id, an empty assistant turn."""
    store = SessionStore(home / "sessions")
    writer = store.create(cwd=str(work))
    turns = [
        text_turn("u1", "user", "start"),
        Turn(id="a1", role="assistant", content=(call("ls", id="c1", path="."),)),
        text_turn("u2", "user", "are you there?"),
        Turn(id="a2", role="assistant", content=(call("ls", id="c2", path="."),)),
        Turn(
            id="u3",
            role="user",
            content=(tool_result("c2", "a.txt"), tool_result("ghost", "from nowhere")),
        ),
        Turn(id="a3", role="assistant", content=(call("ls", id="c2", path="."),)),
        Turn(id="u4", role="user", content=(tool_result("c2", "a.txt"),)),
        Turn(id="a4", role="assistant", content=()),
        text_turn("u5", "user", "finish"),
        Turn(id="a5", role="assistant", content=(TextBlock(text="done"),)),
    ]
    for t in turns:
        writer.append(t)
    return writer.id


def test_a_broken_session_shows_its_repairs_and_no_violation(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("x")
    sid = _broken_session(home, work)
    r = tether([sid, "--tools", "stored"], home, tmp_path)
    assert r.returncode == 1, r.stderr
    found = findings(r.stdout)
    assert found and {f["kind"] for f in found} == {"repair"}
    kinds = {str(f["detail"]).split(":")[0] for f in found}
    assert len(kinds) >= 2, kinds  # the missing result and the orphan result, at least
    for target in TARGETS:
        assert {f["target"] for f in found} >= {target}
        assert f"{target} (tools stored): 5 requests, 0 violations" in r.stderr


def test_the_checker_catches_a_request_that_skips_the_wire_view() -> None:
    """Replay's checks are live: a request sent as a wire view without the passes (an
    unanswered call, then user text) is a violation for every target."""
    turns = (
        text_turn("u1", "user", "start"),
        Turn(id="a1", role="assistant", content=(call("ls", id="c1", path="."),)),
        text_turn("u2", "user", "go on"),
    )
    for target in TARGETS:
        chk = checker(target)
        request = ModelRequest(model=chk.route.model, messages=turns, is_wire_view=True)
        if target == "ollama":  # Ollama documents no pairing rule: a call may go unanswered
            continue
        assert chk.check(request), target


def test_segments_follow_user_prompts() -> None:
    turns = (
        text_turn("u1", "user", "one"),
        Turn(id="a1", role="assistant", content=(call("ls", id="c1"),)),
        Turn(id="u2", role="user", content=(tool_result("c1", "x"),)),
        text_turn("a2", "assistant", "ok"),
        text_turn("u3", "user", "two"),
        text_turn("u4", "user", "three"),
        text_turn("a3", "assistant", "ok"),
    )
    segs = split_segments(turns)
    assert [
        (p and [b.text for b in p if isinstance(b, TextBlock)], [t.id for t in r]) for p, r in segs
    ] == [
        (["one"], ["a1", "a2"]),
        (["two", "three"], ["a3"]),
    ]


def test_replay_run_in_process(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    sid = _record(home, work)
    loaded = SessionStore(home / "sessions").load(sid)
    scratch = tmp_path / "scratch"
    shutil.copytree(work, scratch)
    target: Target = "google"
    report = asyncio.run(replay_run(loaded.turns, target, scratch=scratch, cwd=str(work)))
    assert report.requests == 6 and report.findings == []
    assert (scratch / "out.txt").read_text() == "gamma\n"  # the re-run wrote in the scratch copy
    assert not (work / "out.txt").exists()
