"""bubblewrap, the preferred OS sandbox: `BwrapSandbox` and its one-time probe.

Owns: the bwrap argv for a `SandboxConfig` (see `tether.sandbox` for what it confines) and
`bwrap_sandbox()` (the working sandbox, probed once per process, or None).
Does not own: choosing a sandbox (`tether.sandbox.detect`).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tether.sandbox.base import PROBE_TIMEOUT_S, Sandbox, launcher_prefix
from tether.sandbox.config import SandboxConfig


class BwrapSandbox(Sandbox):
    """bubblewrap (`bwrap` ≥ 0.4): mount, network and user namespaces.

    Args:
        executable: the bwrap binary.
    """

    kind = "bwrap"

    def __init__(self, executable: str = "bwrap") -> None:
        super().__init__()
        self.executable = executable

    def wrap(self, argv: Sequence[str], cfg: SandboxConfig) -> list[str]:
        out = [
            self.executable,
            "--die-with-parent",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        out += [
            "--bind",
            str(self.tmp_dir),
            "/tmp",
            # /run holds the host's service sockets (docker.sock, the D-Bus buses, ...): a
            # command able to connect to one could act outside the sandbox, so it gets an
            # empty /run; with the network on, the resolver's folder comes back read-only
            "--tmpfs",
            "/run",
        ]
        if cfg.network:
            out += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
        if cfg.write_paths is not None:
            out += ["--ro-bind", str(cfg.root), str(cfg.root)]
        for p in cfg.writable():
            out += ["--bind", str(p), str(p)]
        for p in cfg.readonly():
            out += ["--ro-bind", str(p), str(p)]
        # tether's config/data folders and the other sessions' temp folders: empty, read-only
        for p in cfg.hidden_dirs():
            out += ["--tmpfs", str(p), "--remount-ro", str(p)]
        # the files the read deny list refuses (dotenv): an empty read-only file in their place
        for p in cfg.masked:
            if p.is_dir():
                out += ["--tmpfs", str(p), "--remount-ro", str(p)]
            elif p.is_file():
                out += ["--ro-bind", str(self.empty_file), str(p)]
        # the unix sockets the user let in, where /tmp or /run hides them
        for p in cfg.shown_sockets():
            out += ["--bind-try", str(p), str(p)]
        if not cfg.network:
            out.append("--unshare-net")
        if cfg.isolate_pids:
            out.append("--unshare-pid")
        out.append("--")
        guard = self.guard_options(cfg)
        if guard:  # the launcher inside supervises the command's unix-socket connects
            out += [*launcher_prefix(), *guard, "--"]
        out.extend(argv)
        return out

    def socket_folders(self, cfg: SandboxConfig) -> tuple[Path, ...]:
        return (*cfg.socket_folders(), Path("/tmp"))


@functools.cache
def bwrap_sandbox() -> BwrapSandbox | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    # the namespaces and options `wrap` uses, without creating the private temp folder
    probe = [exe, "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/"]
    probe += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-net", "true"]
    try:
        done = subprocess.run(
            probe,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return BwrapSandbox(exe) if done.returncode == 0 else None
