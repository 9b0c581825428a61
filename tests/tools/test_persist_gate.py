"""The output gate (`tether.tools.exec.persist`): cases T25 and T26, persisted-output stubs, binary
output, mixed results, no-session fallback, write failures, and the agent loop wiring."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, ToolResultEvent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.messages import ImageBlock, TextBlock, ToolResultBlock, Turn, text_turn
from tether.session import ARTIFACT_KINDS, SessionStore
from tether.testing import ScriptedProvider, call
from tether.tools.base import tool
from tether.tools.context import ToolOutput
from tether.tools.exec.normalize import PERSISTED_OUTPUT_OPEN, render_stub
from tether.tools.exec.persist import (
    DEFAULT_THRESHOLD_CHARS,
    TOOL_RESULTS_DIR,
    OutputLimits,
    persist_tool_result,
    result_file_name,
    results_folder,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared cases loader
from kit.cases import load_case

STUB_PATH = re.compile(r'<persisted-output size_bytes="(\d+)" path="([^"]+)">')


def _result(text: str, *, call_id: str = "call_1", is_error: bool = False) -> ToolResultBlock:
    return ToolResultBlock(tool_call_id=call_id, content=(TextBlock(text=text),), is_error=is_error)


def _listing(lines: int, size_bytes: int) -> str:
    """An `ls -la`-like listing of exactly `lines` lines and `size_bytes` bytes (ASCII)."""
    per = size_bytes // lines
    rows: list[str] = []
    for i in range(lines):
        width = per + (1 if i < size_bytes - per * lines else 0)
        head = f"-rw-r--r--  1 user staff {i * 37 % 99991:>8} Nov 30 06:00 file_{i:05d}.txt"
        rows.append((head + " " * width)[: width - 1] + "\n")
    return "".join(rows)


# ---- T25 -------------------------------------------------------------------------------


async def test_t25_one_listing_cannot_overflow_the_context(tmp_path: Path) -> None:
    case = load_case("T25")
    assert case["kind"] == "K8"
    out = case["input"]["tool_output"]
    listing = _listing(out["lines"], out["bytes"])
    assert len(listing.encode()) == out["bytes"] and listing.count("\n") == out["lines"]

    @tool(name="bash")
    def shell(cmd: str) -> str:
        """The user's shell escape (a stand-in: the built-in bash keeps only head and tail)."""
        return listing

    store = SessionStore(tmp_path / "sessions")
    writer = store.create("s1", cwd=str(tmp_path))
    args = case["input"]["tool_call"]["args"]
    provider = ScriptedProvider([call("bash", id="call_1", **args), "listed"])
    agent = Agent(
        provider,
        tools=[shell],
        root=tmp_path,
        session=AgentSession(sink=writer, session_dir=store.session_dir("s1")),
    )
    await agent.run("list it")
    writer.close()
    cap = DEFAULT_THRESHOLD_CHARS
    wire_results = [
        b
        for m in provider.requests[-1].messages
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert len(wire_results) == 1
    wire = wire_results[0].text
    # Assert: wire result <= cap; persisted file byte-identical to the original output.
    assert len(wire) <= cap
    m = STUB_PATH.match(wire)
    assert m is not None and int(m.group(1)) == out["bytes"]
    persisted = Path(m.group(2))
    assert persisted == store.session_dir("s1") / TOOL_RESULTS_DIR / "call_1.txt"
    assert persisted.read_bytes() == listing.encode()
    # head and tail excerpts, and how to read more
    assert "file_00000.txt" in wire and "file_08920.txt" in wire
    assert "read tool" in wire and "offset" in wire
    # the stored turn carries the stub, not the 2.3 MB
    stored = store.load("s1").turns
    stored_result = next(b for t in stored for b in t.tool_results)
    assert stored_result.text == wire


# ---- T26 -------------------------------------------------------------------------------


def _progress_log(newlines: int, carriage_returns: int, size_bytes: int) -> tuple[str, list[str]]:
    """A `tail -100 train.log` of progress bars; returns (output, the final state per line)."""
    per_line = carriage_returns // newlines
    extra = carriage_returns - per_line * newlines
    states_needed = carriage_returns + newlines
    pad = max(0, size_bytes // states_needed - 40)
    lines: list[str] = []
    finals: list[str] = []
    for epoch in range(newlines):
        n = per_line + (1 if epoch < extra else 0)
        states = [
            f"epoch {epoch}: {k * 100 // n:3d}%|{'▏' * (k % 8)}| {k}/{n} {'.' * pad}"
            for k in range(n + 1)
        ]
        lines.append("\r".join(states) + "\n")
        finals.append(states[-1])
    return "".join(lines), finals


def test_t26_carriage_returns_cannot_defeat_the_line_limit(tmp_path: Path) -> None:
    case = load_case("T26")
    assert case["kind"] == "K8"
    out = case["input"]["tool_output"]
    raw, finals = _progress_log(out["newline_count"], out["carriage_return_count"], out["bytes"])
    assert raw.count("\n") == 100 and raw.count("\r") == out["carriage_return_count"]
    assert len(raw.encode()) >= out["bytes"] * 0.9
    cap = OutputLimits().max_line_chars
    for session_dir in (None, tmp_path / "s1"):
        stored = persist_tool_result(_result(raw), session_dir)
        lines = stored.text.split("\n")
        # Assert: wire result ≈ 100 short lines; no line longer than the per-line cap.
        assert lines[:100] == finals
        assert len(lines) <= 101 and all(len(line) <= cap for line in lines)
        assert len(stored.text) < 20_000
    # with a session the full raw output goes to disk (as in T25) and the last line says where
    saved = tmp_path / "s1" / TOOL_RESULTS_DIR / "call_1.txt"
    assert saved.read_bytes() == raw.encode()
    assert str(saved) in stored.text.split("\n")[-1]


def test_a_whole_output_on_one_line_is_cut_and_saved(tmp_path: Path) -> None:
    minified = "{" + ",".join(f'"k{i}":{i}' for i in range(3000)) + "}"
    stored = persist_tool_result(_result(minified), tmp_path)
    first, note = stored.text.split("\n")
    assert len(first) == 2000 and re.search(r"… \[\d+ chars cut\]$", first)
    assert "saved at" in note
    assert (tmp_path / TOOL_RESULTS_DIR / "call_1.txt").read_text() == minified
    # no session: cut, with the note, nothing written
    assert persist_tool_result(_result(minified), None).text == first


# ---- the stub ----------------------------------------------------------------------------


def test_stub_is_byte_stable_across_runs_and_call_paths(tmp_path: Path) -> None:
    text = "".join(f"row {i:06d} " + "=" * 60 + "\n" for i in range(2000))
    limits = OutputLimits(threshold_chars=50_000)
    first = persist_tool_result(_result(text), tmp_path, limits)
    second = persist_tool_result(_result(text), tmp_path, limits)
    assert first.text.encode() == second.text.encode()
    saved = tmp_path.resolve() / TOOL_RESULTS_DIR / "call_1.txt"
    data = text.encode()
    assert first.text == render_stub(
        text,
        path=str(Path(os.path.abspath(tmp_path)) / TOOL_RESULTS_DIR / "call_1.txt"),
        size_bytes=len(data),
        lines=2000,
    )
    assert saved.read_bytes() == data
    assert first.text.startswith(PERSISTED_OUTPUT_OPEN)
    assert len(first.text.encode()) < 4096
    # no temp files are left behind
    assert sorted(p.name for p in saved.parent.iterdir()) == ["call_1.txt"]
    assert saved.stat().st_mode & 0o777 == 0o600


def test_error_results_are_gated_and_keep_their_flag(tmp_path: Path) -> None:
    big = "Traceback line\n" * 10_000
    stored = persist_tool_result(_result(big, is_error=True), tmp_path)
    assert stored.is_error and stored.text.startswith(PERSISTED_OUTPUT_OPEN)
    small = persist_tool_result(_result("50%\r100%\n", is_error=True), None)
    assert small.is_error and small.text == "100%\n"


def test_unchanged_results_are_returned_as_is(tmp_path: Path) -> None:
    r = _result("hello\nworld")
    assert persist_tool_result(r, tmp_path) is r
    assert not (tmp_path / TOOL_RESULTS_DIR).exists()


def test_unsafe_call_ids_make_safe_stable_file_names() -> None:
    assert result_file_name("toolu_01ABC", ".txt") == "toolu_01ABC.txt"
    bad = result_file_name("../../etc/passwd", ".txt")
    assert "/" not in bad and not bad.startswith(".") and bad.endswith(".txt")
    assert bad == result_file_name("../../etc/passwd", ".txt")
    assert result_file_name("a/b", ".txt") != result_file_name("a_b", ".txt")


# ---- no session / failures ---------------------------------------------------------------


def test_no_session_falls_back_to_head_and_tail_with_a_notice() -> None:
    text = "".join(f"line {i}\n" for i in range(20_000))
    stored = persist_tool_result(_result(text), None, OutputLimits(threshold_chars=10_000))
    assert len(stored.text) <= 10_000
    assert stored.text.startswith("line 0\n") and stored.text.rstrip().endswith("line 19999")
    assert "chars cut: no session" in stored.text


def test_a_failed_write_degrades_to_head_and_tail(tmp_path: Path) -> None:
    blocker = tmp_path / "s"
    blocker.mkdir()
    (blocker / TOOL_RESULTS_DIR).write_text("a file where the folder should be")
    text = "y" * 100 + "\n" + "z\n" * 40_000
    stored = persist_tool_result(_result(text), blocker)
    assert len(stored.text) <= DEFAULT_THRESHOLD_CHARS
    assert "could not be saved" in stored.text


# ---- binary and mixed --------------------------------------------------------------------


def test_binary_output_becomes_a_notice_and_raw_bytes_are_saved(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 40
    decoded = blob.decode("utf-8", errors="surrogateescape")
    stored = persist_tool_result(_result(decoded, call_id="c9"), tmp_path)
    digest = hashlib.sha256(blob).hexdigest()
    assert f"{len(blob)} bytes" in stored.text and digest in stored.text
    saved = tmp_path / TOOL_RESULTS_DIR / "c9.bin"
    assert str(saved) in stored.text and saved.read_bytes() == blob
    stored.text.encode("utf-8")
    # bash-style decoding (errors="replace") keeps NULs: still binary, no session → not saved
    replaced = blob.decode("utf-8", errors="replace")
    notice = persist_tool_result(_result(replaced), None).text
    assert "binary output" in notice and "not saved (no session)" in notice


def test_mixed_text_and_image_results_are_never_persisted(tmp_path: Path) -> None:
    image = ImageBlock(media_type="image/png", data="iVBORw0KGgo=")
    text = TextBlock(text="x" * 5000 + "\n" + "50%\r100%\n" + "w\n" * 40_000)
    r = ToolResultBlock(tool_call_id="c", content=(text, image))
    stored = persist_tool_result(r, tmp_path)
    assert stored.content[1] is image
    out = stored.content[0]
    assert isinstance(out, TextBlock) and "100%" in out.text and "50%" not in out.text
    assert len(out.text) <= DEFAULT_THRESHOLD_CHARS and "not persisted" in out.text
    assert max(len(line) for line in out.text.split("\n")) <= 2000
    assert not (tmp_path / TOOL_RESULTS_DIR).exists()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["ab", "é€", "\n", "\r", "\x1b[2K", "\x00", "\udcff", "z" * 3000]),
        max_size=60,
    ).map("".join)
)
def test_gate_output_is_valid_utf8_and_bounded_without_a_session(text: str) -> None:
    limits = OutputLimits(threshold_chars=4096, max_line_chars=200)
    stored = persist_tool_result(_result(text or "-"), None, limits)
    stored.text.encode("utf-8")
    notice_bound = 300
    assert len(stored.text) <= max(len(text), 1) + notice_bound
    assert len(stored.text) <= limits.threshold_chars + notice_bound


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError):
        OutputLimits(threshold_chars=10)
    with pytest.raises(ValueError):
        OutputLimits(max_line_chars=5)


# ---- the loop ----------------------------------------------------------------------------


async def test_loop_stores_and_reports_the_gated_result(tmp_path: Path) -> None:
    big = "".join(f"entry {i}\n" for i in range(20_000))

    @tool
    def dump() -> ToolOutput:
        """Print a lot."""
        return ToolOutput(big)

    store = SessionStore(tmp_path / "sessions")
    writer = store.create("s1", cwd=str(tmp_path))
    (tmp_path / "ws").mkdir()
    events: list[AgentEvent] = []
    provider = ScriptedProvider([call("dump", id="c1"), "ok"])
    agent = Agent(
        provider,
        tools=[dump],
        root=tmp_path / "ws",
        host=Host(on_event=events.append),
        session=AgentSession(sink=writer, session_dir=store.session_dir("s1")),
        config=AgentConfig.model_validate({"tools": {"output_threshold_chars": 10_000}}),
    )
    await agent.run("go")
    writer.close()
    ev = next(e for e in events if isinstance(e, ToolResultEvent) and e.tool_call_id == "c1")
    stored: list[Turn] = list(store.load("s1").turns)
    stored_result = next(b for t in stored for b in t.tool_results if b.tool_call_id == "c1")
    assert ev.content == stored_result.text and ev.content.startswith(PERSISTED_OUTPUT_OPEN)
    saved = store.artifact_subdir("s1", "tool-results") / "c1.txt"
    assert saved.read_text() == big
    assert TOOL_RESULTS_DIR in ARTIFACT_KINDS


async def test_a_long_bash_output_is_saved_whole_through_the_loop(tmp_path: Path) -> None:
    """The built-in `bash` keeps up to 8 MB, so the gate saves a real command's whole output
    (here ≈ 190 KB, far over the 50,000-char threshold) and the wire sees only the stub."""
    work, session_dir = tmp_path / "work", tmp_path / "session"
    work.mkdir()
    from tether.tools.builtin.toolset import builtin_tools

    provider = ScriptedProvider([call("bash", command="seq 1 30000"), "done"])
    agent = Agent(
        provider,
        tools=builtin_tools(),
        root=work,
        session=AgentSession(session_dir=session_dir),
    )
    await agent.run("count")
    stored = agent.history[2].tool_results[0].text
    match = STUB_PATH.search(stored)
    assert match is not None and stored.startswith(PERSISTED_OUTPUT_OPEN)
    saved = Path(match.group(2)).read_text()
    assert saved == "".join(f"{i}\n" for i in range(1, 30001))  # the command's bytes, exactly
    assert int(match.group(1)) == len(saved.encode())
    assert len(stored) < 5_000  # the request that follows carries the stub, not 190 KB
    assert stored in provider.requests[1].messages[-1].tool_results[0].text


# ---- durability: the gate writes atomically, the session's sync() fsyncs -------------------


def test_saved_outputs_are_fsynced_with_the_session_not_per_call(
    tmp_path: Path, fsynced: list[tuple[str, int]]
) -> None:
    """The gate writes a saved output completely (renamed into place, no temp file left) but
    does not fsync it per call (1.5 ms CPU per 2 KB file, more than the rest of a turn);
    `SessionWriter.sync()` fsyncs it, its folder and then the session file, once."""
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(cwd=str(tmp_path))
    fsynced.clear()  # creating the session file fsyncs it (atomic create)
    big = "line\n" * (DEFAULT_THRESHOLD_CHARS // 4)
    gated = persist_tool_result(_result(big, call_id="c1"), writer.session_dir)
    saved = writer.session_dir / TOOL_RESULTS_DIR / "c1.txt"
    assert saved.read_text() == big and PERSISTED_OUTPUT_OPEN in gated.text
    assert [p.name for p in saved.parent.iterdir()] == ["c1.txt"]  # no temp file left
    assert fsynced == []
    writer.append(text_turn("u1", "user", "x"))
    writer.sync()
    assert [p for p, _ in fsynced[:3]] == [str(saved), str(saved.parent), str(writer.path)]
    fsynced.clear()
    writer.sync()  # nothing new saved: only the session file
    assert [p for p, _ in fsynced] == [str(writer.path)]
    writer.close()


def test_the_results_folder_is_made_on_demand_private(tmp_path: Path) -> None:
    """The gate's first save in a session makes `tool-results/` (0o700) and the file (0o600);
    the temp names and the write itself are `tether.atomic`'s (tests/test_atomic.py)."""
    session_dir = tmp_path / "a"
    session_dir.mkdir()
    persist_tool_result(_result("x" * (DEFAULT_THRESHOLD_CHARS + 1), call_id="c1"), session_dir)
    folder = session_dir / TOOL_RESULTS_DIR
    assert folder.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in folder.iterdir()] == ["c1.txt"]
    assert (folder / "c1.txt").stat().st_mode & 0o777 == 0o600


def test_the_results_folder_is_worked_out_once_per_session_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved output per turn: the absolute results folder of an absolute session folder is
    kept (the same object each time); a relative one follows the working folder."""
    session = tmp_path / "s"
    first = results_folder(session)
    assert first == session / TOOL_RESULTS_DIR and results_folder(session) is first
    long_line = "z" * 3_000
    stored = persist_tool_result(
        ToolResultBlock(tool_call_id="c1", content=(TextBlock(text=long_line),)), session
    )
    assert (first / "c1.txt").read_text() == long_line and str(first / "c1.txt") in stored.text
    for where in (tmp_path / "a", tmp_path / "b"):
        where.mkdir()
        monkeypatch.chdir(where)
        assert results_folder(Path("rel")) == where / "rel" / TOOL_RESULTS_DIR
