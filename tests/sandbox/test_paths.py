"""Kinds 6 and 9 of issue 11 under both sandboxes: `ls`/`glob` never list an outside folder that
a parallel call swaps in for a symlink; `tools.write_paths` limits writes of the file tools (by
real path) and of `bash` (only those folders are bound writable)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kit.sandbox import bash, call, context
from tether.sandbox.policy import DEFAULT_POLICY, PathPolicy
from tether.tools import ToolContext
from tether.tools.builtin.files import ls
from tether.tools.builtin.search import glob_

TRIES = 400


@pytest.mark.parametrize("tool", ["ls", "glob"])
def test_a_folder_swapped_for_a_symlink_never_lists_outside(
    root: Path, kind: str, tmp_path: Path, tool: str
) -> None:
    outside = tmp_path / "OUTSIDE"
    outside.mkdir()
    (outside / "SECRET_NAME").write_text("x")
    (root / "d.real").mkdir()
    (root / "d.real" / "inside_name").write_text("x")
    os.symlink(outside, root / "d.link")
    ctx: ToolContext = context(root, kind)
    stop = threading.Event()

    def swap() -> None:
        d, real, link = root / "d", root / "d.real", root / "d.link"
        while not stop.is_set():
            try:
                os.rename(real, d)  # d is the folder
                os.rename(d, real)
                os.rename(link, d)  # d is the symlink to outside
                os.rename(d, link)
            except OSError:
                pass

    t = threading.Thread(target=swap, daemon=True)
    t.start()
    leaks = 0
    try:
        for _ in range(TRIES):
            try:
                out = ls.fn(path="d", ctx=ctx) if tool == "ls" else glob_.fn(pattern="d/*", ctx=ctx)
            except Exception:  # refused or gone mid-swap: fine, it listed nothing outside
                continue
            leaks += "SECRET_NAME" in str(out)
    finally:
        stop.set()
        t.join()
    assert leaks == 0, f"{tool} listed the outside folder {leaks} times of {TRIES}"


def scoped(root: Path, kind: str) -> ToolContext:
    policy = PathPolicy(deny_read=DEFAULT_POLICY.deny_read, write_paths=("output",))
    return context(root, kind, policy=policy)


async def test_file_tools_write_only_inside_write_paths(root: Path, kind: str) -> None:
    ctx = scoped(root, kind)
    r = await call(ctx, "write", path="output/a.txt", content="ok")
    assert not r.is_error, r.text
    for target in ("x.txt", "output/../x.txt", "src/output/y.txt"):
        r = await call(ctx, "write", path=target, content="no")
        assert r.is_error and "write scope" in r.text, (target, r.text)
    (root / "out").symlink_to(root / "src", target_is_directory=False)
    r = await call(ctx, "write", path="out/z.txt", content="no")
    assert r.is_error
    assert sorted(p.name for p in root.iterdir() if p.is_file()) == []


async def test_bash_writes_only_inside_write_paths(root: Path, kind: str) -> None:
    ctx = scoped(root, kind)
    r = await bash(ctx, "echo ok > output/a.txt && echo wrote")
    assert r.text == "wrote", r.text
    r = await bash(ctx, "echo no > x.txt")
    assert "exit code 0" not in r.text and "(exit code" in r.text, r.text
    assert not (root / "x.txt").exists()
    assert (root / "output" / "a.txt").read_text() == "ok\n"


async def test_without_write_paths_the_whole_folder_is_writable(root: Path, kind: str) -> None:
    r = await bash(context(root, kind), "echo ok > x.txt && echo wrote")
    assert r.text == "wrote"
