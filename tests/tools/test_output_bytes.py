"""Tool output, byte for byte: what the output gate saves (and what its stub or notice says it
saved) is exactly what the command wrote — trailing newlines kept, the tool's exit-code note
left out, and an output that renders to nothing (megabytes of `\\r`) saved all the same."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import TextBlock, ToolResultBlock
from tether.testing import ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.context import ToolOutput
from tether.tools.exec.outcome import Outcome, to_outcome
from tether.tools.exec.persist import persist_tool_result

STUB = re.compile(r'<persisted-output size_bytes="(\d+)" path="([^"]+)">')
SAVED_NOTE = re.compile(r"\((\d+) bytes, \d+ lines\) saved at (\S+);")


async def _bash_through_the_loop(tmp_path: Path, command: str) -> tuple[str, Path]:
    """Run one `bash` call through the agent loop with a session; the stored result text and
    the session folder."""
    work, session_dir = tmp_path / "work", tmp_path / "session"
    work.mkdir(exist_ok=True)
    (work / "big.txt").write_bytes(BIG)
    provider = ScriptedProvider([call("bash", command=command), "done"])
    agent = Agent(
        provider, tools=builtin_tools(), root=work, session=AgentSession(session_dir=session_dir)
    )
    await agent.run("go")
    return agent.history[2].tool_results[0].text, session_dir


_LINES = b"".join(b"line %05d of a file that ends in a newline\n" % i for i in range(1300))
BIG = _LINES + b"x" * (61_249 - len(_LINES) - 1) + b"\n"


async def test_cat_of_a_file_is_saved_with_its_last_newline(tmp_path: Path) -> None:
    assert len(BIG) == 61_249
    stored, _ = await _bash_through_the_loop(tmp_path, "cat big.txt")
    m = STUB.search(stored)
    assert m is not None, stored[:300]
    assert int(m.group(1)) == 61_249
    assert Path(m.group(2)).read_bytes() == BIG


async def test_the_exit_code_note_is_shown_but_not_saved(tmp_path: Path) -> None:
    stored, _ = await _bash_through_the_loop(tmp_path, "cat big.txt; cat big.txt; exit 3")
    m = STUB.search(stored)
    assert m is not None, stored[:300]
    assert "(exit code 3)" in stored
    assert Path(m.group(2)).read_bytes() == BIG + BIG
    assert int(m.group(1)) == 2 * len(BIG)


async def test_megabytes_of_carriage_returns_are_saved_not_called_no_output(
    tmp_path: Path,
) -> None:
    n = 5_000_000
    stored, _ = await _bash_through_the_loop(
        tmp_path, f"python3 -c \"import sys; sys.stdout.write(chr(13) * {n})\""
    )
    assert "(no output" not in stored, stored
    m = STUB.search(stored) or SAVED_NOTE.search(stored)
    assert m is not None, stored
    assert int(m.group(1)) == n
    assert Path(m.group(2)).read_bytes() == b"\r" * n


def test_a_binary_notice_describes_the_raw_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40 + b"\n\n"
    text = data.decode("utf-8", "surrogateescape").rstrip("\n") + "\n(exit code 1)"
    block = ToolResultBlock(tool_call_id="c1", content=(TextBlock(text=text),))
    out = persist_tool_result(block, tmp_path, raw=data).text
    assert hashlib.sha256(data).hexdigest() in out, out
    assert str(len(data)) in out
    assert (tmp_path / "tool-results" / "c1.bin").read_bytes() == data


def test_a_small_output_with_raw_bytes_is_left_alone(tmp_path: Path) -> None:
    block = ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="ok\n(exit code 1)"),))
    assert persist_tool_result(block, tmp_path, raw=b"ok\n\n") is block
    assert not (tmp_path / "tool-results").exists()


@pytest.mark.parametrize("raw", [None, b"", b"\x00\xff\r\n tail\n"])
def test_raw_bytes_cross_the_worker_protocol(raw: bytes | None) -> None:
    outcome = to_outcome(ToolOutput("shown", raw=raw))
    assert outcome.raw == raw
    assert Outcome.from_json(outcome.to_json()) == outcome
