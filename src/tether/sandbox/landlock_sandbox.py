"""Landlock, the fallback OS sandbox: `LandlockSandbox`, the harness side of the stdlib-only
launcher `tether.sandbox.landlock` (which this module runs by its file path with `python -I -S`).

Owns: the launcher argv for a `SandboxConfig`, the in-child confinement of `launch`, and
`landlock_sandbox()` (the working sandbox, probed once per process, or None).
Does not own: the syscalls and the launcher (`tether.sandbox.landlock`), choosing a sandbox
(`tether.sandbox.detect`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence

from tether.sandbox import landlock
from tether.sandbox.base import Launch, Sandbox
from tether.sandbox.policy import SandboxConfig


class LandlockSandbox(Sandbox):
    """Landlock via the `tether.sandbox.landlock` launcher run by this Python (`-I -S`: no
    site-packages, ~12 ms to start).

    Args:
        abi: the kernel's Landlock ABI version (≥ 1).
        python: the interpreter running the launcher.
        in_child: `launch` confines in the forked child (no launcher start-up, but no PID
            namespace and no reaping of what the command leaves behind); False (the default)
            makes `launch` use the launcher like `wrap`, which reaps every descendant.
    """

    kind = "landlock"

    def __init__(self, abi: int, python: str = sys.executable, *, in_child: bool = False) -> None:
        super().__init__()
        self.abi = abi
        self.python = python
        self.launcher = landlock.__file__
        self.in_child = in_child

    def wrap(self, argv: Sequence[str], cfg: SandboxConfig) -> list[str]:
        out = [self.python, "-I", "-S", "-B", self.launcher, "--tmp", str(self.tmp_dir)]
        for p in cfg.writable():
            out += ["--write", str(p)]
        for p in cfg.readonly():
            out += ["--ro", str(p)]
        for p in cfg.hidden_dirs():
            out += ["--hide", str(p)]
        if cfg.write_paths is not None:
            out += ["--keep", str(cfg.root)]
        if cfg.network:
            out.append("--net")
        out.append("--")
        out.extend(argv)
        return out

    def launch(self, argv: Sequence[str], cfg: SandboxConfig) -> Launch:
        """Confine in the forked child instead of exec'ing the launcher (saves the ~12 ms
        Python start-up per command): the ruleset is built here, in the parent, and the child
        only makes the syscalls of `landlock.enter`. With `in_child=False`: the launcher."""
        if not self.in_child:
            return Launch(argv=self.wrap(argv, cfg))
        tmp = str(self.tmp_dir)
        writable = [*map(str, cfg.writable()), tmp]
        hidden = [str(p) for p in cfg.hidden_dirs()]
        ruleset = landlock.build_ruleset(
            writable, network=cfg.network, abi=self.abi, hidden=hidden
        )
        readonly = [str(p) for p in cfg.readonly()]
        keep = [*writable[:-1], *readonly]
        keep_ro = [str(cfg.root)] if cfg.write_paths is not None else []

        def preexec() -> None:
            landlock.enter(
                ruleset,
                readonly=readonly,
                network=cfg.network,
                tmp=tmp,
                keep=keep,
                hidden=hidden,
                keep_ro=keep_ro,
            )

        return Launch(
            argv=list(argv),
            env={"TMPDIR": tmp},
            preexec=preexec,
            _close=lambda: os.close(ruleset),
        )

    def __repr__(self) -> str:
        return f"LandlockSandbox(abi={self.abi})"


@functools.cache
def landlock_sandbox() -> LandlockSandbox | None:
    abi = landlock.abi_version()
    return LandlockSandbox(abi) if abi >= 1 else None
