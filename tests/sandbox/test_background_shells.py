"""Issue 40 item 3, under bwrap and under Landlock: a background shell (`bash` with
`run_in_background`) is a real process that writes for a few seconds; `shell_output` reads only
what is new each time; `shell_kill` ends its whole process group; the cap
(`tools.max_background`) refuses one more with a clear result; closing the manager (the agent's
close: run end, TUI exit) leaves nothing in the process table; the output is saved in the
session's `tasks/` folder."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kit.procs import alive, marker
from kit.sandbox import call, context
from tether.tools.context import ToolContext
from tether.tools.exec.background import BackgroundShells


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is in process group `pgid` (a zombie whose parent
    was killed waits for PID 1 to reap it, which some containers' PID 1 never does)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def settle(mark: str, pgid: int | None = None) -> list[int]:
    """Wait up to 10 s (a loaded 2-core machine: a sandbox's PID namespace can take seconds to
    tear down) for `mark`'s processes (and group `pgid`) to be gone; what is left is killed (not
    leaked into the suite) and returned."""
    left: list[int] = []
    for _ in range(200):
        left = alive(mark)
        if not left and (pgid is None or not group_alive(pgid)):
            return []
        time.sleep(0.05)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left or [pgid or 0]


def with_shells(ctx: ToolContext, session_dir: Path, n: int = 8) -> ToolContext:
    return replace(ctx, shells=BackgroundShells(n), session_dir=session_dir)


def lines(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"^line(\d+)$", text, re.M)]


WRITER = "sleep {mark} & for i in $(seq 1 40); do echo line$i; sleep 0.1; done; wait"
"""Writes a line every 0.1 s for about 4 s, with a child (`sleep MARK`) that outlives the loop
unless its group is killed."""


async def test_output_is_read_twice_then_the_shell_is_killed(
    root: Path, kind: str, tmp_path: Path
) -> None:
    mark = marker()
    ctx = with_shells(context(root, kind), tmp_path / "session")
    started = await call(ctx, "bash", command=WRITER.format(mark=mark), run_in_background=True)
    assert not started.is_error, started.text
    (shell_id,) = re.findall(r"\bbash_\d+\b", started.text)[:1]
    assert ctx.shells is not None
    shell = ctx.shells.get(shell_id)
    assert shell is not None
    try:
        await asyncio.sleep(1.0)
        first = await call(ctx, "shell_output", shell_id=shell_id)
        assert not first.is_error, first.text
        assert "running" in first.text
        got1 = lines(first.text)
        assert got1 and got1 == list(range(1, len(got1) + 1)), first.text
        await asyncio.sleep(0.8)
        second = await call(ctx, "shell_output", shell_id=shell_id)
        got2 = lines(second.text)
        # only new output: it starts right after the first read's last line
        assert got2 and got2[0] == got1[-1] + 1, (got1, got2)
        assert got2 == list(range(got2[0], got2[0] + len(got2)))
        assert alive(mark), "the background shell's child should be running"
        killed = await call(ctx, "shell_kill", shell_id=shell_id)
        assert not killed.is_error and "stopped" in killed.text, killed.text
        after = await call(ctx, "shell_output", shell_id=shell_id)
        assert "killed" in after.text
        assert settle(mark, shell.pid) == [], f"the killed shell left processes under {kind}"
        # everything it wrote is in the session's tasks/ folder
        log = tmp_path / "session" / "tasks" / f"{shell_id}.log"
        assert shell.log == log
        assert lines(log.read_text())[: len(got1) + len(got2)] == got1 + got2
    finally:
        await ctx.shells.aclose()
        settle(mark)


async def test_a_shell_that_ends_reports_its_exit_code(root: Path, kind: str, tmp_path: Path) -> None:
    ctx = with_shells(context(root, kind), tmp_path / "session")
    started = await call(ctx, "bash", command="echo hello; exit 3", run_in_background=True)
    assert not started.is_error, started.text
    assert ctx.shells is not None
    (shell,) = ctx.shells.all()
    for _ in range(100):
        if not shell.running:
            break
        await asyncio.sleep(0.05)
    out = await call(ctx, "shell_output", shell_id=shell.id)
    assert "hello" in out.text and "exit code 3" in out.text, out.text
    again = await call(ctx, "shell_output", shell_id=shell.id)
    assert "hello" not in again.text and "(no new output)" in again.text


async def test_the_cap_refuses_one_more_and_closing_ends_them_all(
    root: Path, kind: str, tmp_path: Path
) -> None:
    mark = marker()
    ctx = with_shells(context(root, kind), tmp_path / "session", n=2)
    assert ctx.shells is not None
    try:
        for _ in range(2):
            r = await call(ctx, "bash", command=f"sleep {mark}", run_in_background=True)
            assert not r.is_error, r.text
        refused = await call(ctx, "bash", command=f"sleep {mark}", run_in_background=True)
        assert refused.is_error
        assert "2 background shells are running already (tools.max_background)" in refused.text
        assert "shell_kill" in refused.text
        assert len(ctx.shells.running()) == 2
        for _ in range(40):
            if len(alive(mark)) >= 2:
                break
            await asyncio.sleep(0.05)
        assert len(alive(mark)) >= 2
        pgids = [s.pid for s in ctx.shells.all()]
        listing = await call(ctx, "shell_output")
        assert "bash_1: running" in listing.text and "bash_2: running" in listing.text
        # the agent's close (run end, TUI exit): nothing left in the process table
        await ctx.shells.aclose()
        assert settle(mark) == [], f"a closed manager left processes under {kind}"
        assert not any(group_alive(p) for p in pgids)
        assert all(s.state() == "killed" for s in ctx.shells.all())
        # with one slot free again a start works
        r = await call(ctx, "bash", command="echo again", run_in_background=True)
        assert not r.is_error, r.text
    finally:
        await ctx.shells.aclose()
        settle(mark)


async def test_without_a_manager_background_is_refused(root: Path, kind: str) -> None:
    r = await call(context(root, kind), "bash", command="sleep 1", run_in_background=True)
    assert r.is_error and "only the main agent" in r.text


@pytest.mark.parametrize("how", ["setsid", "double-fork"])
async def test_a_killed_shell_takes_its_escapees_with_it(
    root: Path, kind: str, tmp_path: Path, how: str
) -> None:
    """What the shell detaches (a new session, a double fork) is not in its process group,
    but it is in the sandbox's PID namespace / under the launcher's reaper: it ends too."""
    mark = marker()
    daemon = {
        "setsid": f"setsid sleep {mark} > /dev/null 2>&1 < /dev/null &",
        "double-fork": f"( ( sleep {mark} > /dev/null 2>&1 & ) & )",
    }[how]
    ctx = with_shells(context(root, kind), tmp_path / "session")
    assert ctx.shells is not None
    try:
        r = await call(ctx, "bash", command=f"{daemon}\nsleep 600", run_in_background=True)
        assert not r.is_error, r.text
        escapee = f"sleep {mark}"  # the detached sleep itself, not the shells forking it
        for _ in range(200):  # up to 10 s: the sandbox's start on a loaded machine
            if alive(escapee, comm="sleep"):
                break
            await asyncio.sleep(0.05)
        assert alive(escapee, comm="sleep")
        (shell,) = ctx.shells.all()
        await ctx.shells.kill(shell.id)
        assert settle(mark) == [], f"{how} outlived its killed background shell under {kind}"
    finally:
        await ctx.shells.aclose()
        settle(mark)


async def test_a_cap_of_zero_turns_background_shells_off(root: Path, kind: str, tmp_path: Path) -> None:
    ctx = with_shells(context(root, kind), tmp_path / "session", n=0)
    r = await call(ctx, "bash", command="echo x", run_in_background=True)
    assert r.is_error and "background shells are off here (tools.max_background is 0)" in r.text


async def test_a_chatty_shell_keeps_a_bounded_log(
    root: Path, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`yes` in the background wrote 2.4 GB in 8 s to its log (found by a new user): the log
    is rotated past `LOG_PART_BYTES`, two parts kept, the newest output in `<id>.log` after a
    line naming the older part; the model reads the newest unread output with a note."""
    from tether.tools.exec import background

    monkeypatch.setattr(background, "LOG_PART_BYTES", 20_000)
    monkeypatch.setattr(background, "UNREAD_BYTES", 8_000)
    ctx = with_shells(context(root, kind), tmp_path / "session")
    command = "seq 1 100000 | sed 's/^/line/'"  # ~1 MB
    started = await call(ctx, "bash", command=command, run_in_background=True)
    assert not started.is_error, started.text
    assert ctx.shells is not None
    (shell,) = ctx.shells.all()
    for _ in range(200):
        if not shell.running:
            break
        await asyncio.sleep(0.05)
    assert not shell.running and shell.total > 900_000
    folder = tmp_path / "session" / "tasks"
    assert sorted(p.name for p in folder.iterdir()) == [f"{shell.id}.1.log", f"{shell.id}.log"]
    # a part ends at the first read past its size: at most a read (64 KB) over it
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 2 * (20_000 + 65_536) + 400
    newest = (folder / f"{shell.id}.log").read_text()
    first, *rest = newest.splitlines()
    assert first.startswith("[tether: ") and f"{shell.id}.1.log" in first, first
    assert rest[-1] == "line100000"
    out = await call(ctx, "shell_output", shell_id=shell.id)
    assert "earlier bytes not shown; the latest output is in" in out.text
    assert lines(out.text)[-1] == 100000 and len(out.text) < 8_000 + 400


async def test_an_end_is_due_once_unless_the_model_read_it(root: Path, kind: str, tmp_path: Path) -> None:
    """`take_ended` (what the model is told before its next request) gives a shell that ended
    once; a shell whose end the model read with `shell_output` is not given."""
    ctx = with_shells(context(root, kind), tmp_path / "session")
    assert ctx.shells is not None
    for command in ("echo one", "echo two"):
        started = await call(ctx, "bash", command=command, run_in_background=True)
        assert not started.is_error, started.text
    one, two = ctx.shells.all()
    for _ in range(200):
        if not one.running and not two.running:
            break
        await asyncio.sleep(0.05)
    out = await call(ctx, "shell_output", shell_id=two.id)
    assert "exit code 0" in out.text
    assert ctx.shells.take_ended() == [one]
    assert ctx.shells.take_ended() == []
