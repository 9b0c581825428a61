"""Landlock, the fallback OS sandbox: `LandlockSandbox`, the harness side of the stdlib-only
launcher `tether.sandbox.launcher` (which this module runs by its file path with `python -I -S`).

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
from pathlib import Path

from tether.sandbox import landlock, unixguard
from tether.sandbox.base import Launch, Sandbox, guard_program_or_warn
from tether.sandbox.config import SandboxConfig


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
        self.in_child = in_child

    def wrap(self, argv: Sequence[str], cfg: SandboxConfig) -> list[str]:
        opts = ["--landlock", "--tmp", str(self.tmp_dir)]
        for p in cfg.writable():
            opts += ["--write", str(p)]
        for p in cfg.readonly():
            opts += ["--ro", str(p)]
        for p in cfg.hidden_dirs():
            opts += ["--hide", str(p)]
        if cfg.write_paths is not None:
            opts += ["--keep", str(cfg.root)]
        if cfg.masked:
            opts += ["--empty", str(self.empty_file)]
            for p in cfg.masked:
                opts += ["--mask", str(p)]
        if cfg.network:
            opts.append("--net")
        out = self.launcher_argv(cfg, opts, self.python)
        if "--guard" not in out:  # sockets the user let in stay visible all the same
            for p in cfg.shown_sockets():
                out += ["--socket", str(p)]
        out.append("--")
        out.extend(argv)
        return out

    def socket_folders(self, cfg: SandboxConfig) -> tuple[Path, ...]:
        # the private temp folder as itself; the launcher adds /tmp when it mounted it there
        return (*cfg.socket_folders(), self.tmp_dir)

    def abstract_ok(self, cfg: SandboxConfig) -> bool:
        # ABI 6 scopes abstract sockets to the sandbox; else only a network namespace does
        return self.abi >= 6 or not cfg.network

    def launch(self, argv: Sequence[str], cfg: SandboxConfig) -> Launch:
        """Confine in the forked child instead of exec'ing the launcher (saves the ~12 ms
        Python start-up per command): the ruleset is built here, in the parent, and the child
        only makes the syscalls of `landlock.enter`. Without a supervisor the unix-socket guard
        is the stricter program: no unix socket but `socketpair`
        (`tether.sandbox.seccomp.deny_program`). With `in_child=False`: the launcher."""
        if not self.in_child:
            return Launch(argv=self.wrap(argv, cfg))
        tmp = str(self.tmp_dir)
        writable = [*map(str, cfg.writable()), tmp]
        hidden = [str(p) for p in cfg.hidden_dirs()]
        ruleset = landlock.build_ruleset(
            writable, network=cfg.network, abi=self.abi, hidden=hidden
        )
        readonly = [str(p) for p in cfg.readonly()]
        keep = [*writable[:-1], *readonly, *map(str, cfg.shown_sockets())]
        keep_ro = [str(cfg.root)] if cfg.write_paths is not None else []
        masks = [str(p) for p in cfg.masked]
        empty = str(self.empty_file) if masks else None
        deny = deny_program_or_none() if cfg.unix_guard else None

        def preexec() -> None:
            landlock.enter(
                ruleset,
                readonly=readonly,
                network=cfg.network,
                tmp=tmp,
                keep=keep,
                hidden=hidden,
                keep_ro=keep_ro,
                masks=masks,
                empty=empty,
            )
            if deny is not None:
                unixguard.install(deny, listen=False)

        return Launch(
            argv=list(argv),
            env={"TMPDIR": tmp},
            preexec=preexec,
            _close=lambda: os.close(ruleset),
        )

    def __repr__(self) -> str:
        return f"LandlockSandbox(abi={self.abi})"


def deny_program_or_none() -> bytes | None:
    """The guard's supervisor-less program, or None where the guard does not work (warned
    once by `guard_program_or_warn`)."""
    if guard_program_or_warn() is None:
        return None
    from tether.sandbox import seccomp

    return seccomp.deny_program()


@functools.cache
def landlock_sandbox() -> LandlockSandbox | None:
    abi = landlock.abi_version()
    return LandlockSandbox(abi) if abi >= 1 else None
