"""Tool output above 8 MB is saved whole (issue 39, instrument finding 4).

`bash` keeps the first and last 4 MB of an output in memory; the middle was counted and saved
nowhere, while docs/writing-tools.md says a long result is written "byte for byte as the tool
produced it". With a session the whole output is now streamed to a spill file, which the output
gate moves into place as the call's saved output.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.sandbox.proc import HeadTail
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.exec.persist import redact_file

COMMAND = "seq 1 1500000; echo tail-marker"  # ~10.9 MB, deterministic


def test_bash_output_over_8_mb_is_saved_byte_for_byte(tmp_path: Path) -> None:
    expected = subprocess.run(["bash", "-c", COMMAND], capture_output=True, check=True).stdout
    assert len(expected) > 8_000_000
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    agent = Agent(
        ScriptedProvider([call("bash", id="big1", command=COMMAND), "done"]),
        tools=builtin_tools(),
        root=tmp_path,
        session=AgentSession(sink=writer),
    )
    asyncio.run(agent.run("print a lot"))
    writer.close()
    (result,) = store.load(writer.id).turns[2].tool_results
    match = re.search(r'size_bytes="(\d+)" path="([^"]+)"', result.text)
    assert match is not None, result.text[:500]
    saved = Path(match.group(2))
    assert int(match.group(1)) == len(expected)
    assert saved.read_bytes() == expected  # the middle too
    assert "The full output" in result.text and "dropped" not in result.text
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]  # no spill file left


def test_head_tail_spills_the_whole_stream_only_past_its_capacity(tmp_path: Path) -> None:
    small = HeadTail(head=10, tail=10, spill=tmp_path / "a.tmp")
    small.feed(b"x" * 20)
    assert small.spilled() is None and not (tmp_path / "a.tmp").exists()
    big = HeadTail(head=10, tail=10, spill=tmp_path / "b.tmp")
    chunks = [bytes([65 + k]) * 7 for k in range(20)]
    for c in chunks:
        big.feed(c)
    path = big.spilled()
    assert path is not None and path.read_bytes() == b"".join(chunks)
    assert "bytes of output cut" in big.text()
    gone = HeadTail(head=10, tail=10, spill=tmp_path / "c.tmp")
    gone.feed(b"y" * 50)
    gone.discard()
    assert not (tmp_path / "c.tmp").exists()


def test_a_spilled_output_is_redacted_in_place(tmp_path: Path) -> None:
    path = tmp_path / "s.tmp"
    line = b"token=sk-SECRET-123 and more\n"
    path.write_bytes(line * 100_000)  # ~2.9 MB: several blocks
    redact_file(path, lambda t: t.replace("sk-SECRET-123", "[redacted]"))
    data = path.read_bytes()
    assert b"sk-SECRET" not in data
    assert data == b"token=[redacted] and more\n" * 100_000
