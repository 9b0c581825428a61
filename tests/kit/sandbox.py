"""The OS sandboxes for tests: `sandbox_or_skip` (any working one), `sandbox_for` (a given
kind, for suites that run under each), and the containment suite's helpers: contexts, a
folder tool, and one way to run each tool (file tools in-process, `bash`, a folder tool in
its worker)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tether.messages import ToolCallBlock, ToolResultBlock
from tether.sandbox.base import Sandbox
from tether.sandbox.detect import available
from tether.sandbox.landlock_sandbox import LandlockSandbox
from tether.sandbox.limits import ResourceLimits
from tether.sandbox.policy import DEFAULT_POLICY, PathPolicy
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env
from tether.tools.scan import scan_tool_folders

_ids = itertools.count()

WORKER_TOOL = '''
import os, subprocess
from tether.tools import tool

@tool
def sh(command: str) -> str:
    """Run a shell command from the folder tool's worker."""
    p = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
    return (p.stdout + p.stderr).strip() + f"\\n(exit code {p.returncode})"
'''


SANDBOX_KINDS = ("none", "bwrap", "landlock-child", "landlock")
"""Every way a tool subprocess can run: unsandboxed, bwrap, Landlock entered in the forked child
(`in_child=True`: no launcher, no reaping), and Landlock through the stdlib-only launcher
(`Sandbox.wrap`, the default path of the bash tool and of any other subprocess such as a
worker)."""


def sandbox_or_skip() -> str:
    """The kind of a working OS sandbox (bwrap, else Landlock); skips the test where none
    works."""
    found = available("bwrap") or available("landlock")
    if found is None:
        pytest.skip("no OS sandbox works on this machine")
    return found.kind


def sandbox_for(kind: str) -> Sandbox | None:
    """The sandbox of `kind` (one of `SANDBOX_KINDS`; None for `none`); skips the test (reason
    printed) when it does not work here. `landlock-child` is a fresh sandbox of its own."""
    if kind == "none":
        return None
    found = available("bwrap" if kind == "bwrap" else "landlock")
    if found is None:
        pytest.skip(
            f"sandbox {kind} is not available on this machine (needs bwrap + user "
            "namespaces, or a kernel with Landlock)"
        )
    if kind == "landlock-child":
        assert isinstance(found, LandlockSandbox)
        return LandlockSandbox(found.abi, in_child=True)
    return found


def context(
    root: Path,
    kind: str,
    *,
    policy: PathPolicy | None = DEFAULT_POLICY,
    limits: ResourceLimits | None = None,
    env: dict[str, str] | None = None,
) -> ToolContext:
    return ToolContext.create(
        root,
        env=scrubbed_env() if env is None else env,
        sandbox=sandbox_for(kind),
        policy=policy,
        limits=limits,
    )


def tool_folder(where: Path) -> Path:
    """A tool folder (outside the project) with the `sh` folder tool."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "shtool.py").write_text(WORKER_TOOL)
    return where


def registry(folder: Path | None = None) -> ToolRegistry:
    if folder is None:
        return ToolRegistry(builtin_tools())
    return scan_tool_folders([folder], base=builtin_tools()).registry


async def call(
    ctx: ToolContext, name: str, reg: ToolRegistry | None = None, **args: Any
) -> ToolResultBlock:
    block = ToolCallBlock(id=f"c{next(_ids)}", name=name, arguments=args)
    return await run_tool_call(reg or registry(), block, ctx)


async def bash(ctx: ToolContext, command: str) -> ToolResultBlock:
    return await call(ctx, "bash", command=command, timeout_s=60)


async def worker_sh(ctx: ToolContext, folder: Path, command: str) -> ToolResultBlock:
    return await call(ctx, "sh", registry(folder), command=command)
