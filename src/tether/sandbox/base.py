"""The OS sandbox mechanism's common part: `Sandbox` (its `wrap(argv, cfg)` returns the argv
that runs `argv` confined, for any subprocess such as the tool worker; its `launch(argv, cfg)` is
the cheapest way for a caller that spawns the process itself: `Launch`, with argv, env additions
and a child-side `preexec`), the per-process private temp folder and its stale-folder cleanup,
and `SandboxMechanism`.
Does not own: `SandboxUnavailableError` (`tether.errors`), what a command may touch (`tether.sandbox.config.SandboxConfig`), the two kinds
(`tether.sandbox.bwrap`, `tether.sandbox.landlock_sandbox`), choosing one
(`tether.sandbox.detect`), running processes (`tether.sandbox.proc`). See `tether.sandbox` for
what is confined under both kinds.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import shutil
import stat
import sys
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from tether.sandbox.config import SandboxConfig, tmp_parent

log = logging.getLogger(__name__)

SandboxMechanism = Literal["bwrap", "landlock"]
"""The OS mechanisms a `Sandbox` is made of (the settings' `sandbox` choice adds `auto`/`none`)."""
SANDBOX_ENV = "TETHER_SANDBOX"
"""Environment variable forcing the sandbox choice: `bwrap`, `landlock`, `none` or `auto`."""

PROBE_TIMEOUT_S = 10.0


def clean_stale_tmp(parent: Path) -> list[Path]:
    """Remove private temp folders under `parent` whose owner process is gone (tether was
    killed with -9, so its atexit cleanup never ran). A live owner holds an exclusive `flock`
    on `<folder>.lock`; a folder whose lock can be taken is stale.

    Returns:
        The folders removed.
    """
    import fcntl

    removed: list[Path] = []
    try:
        locks = [p for p in parent.iterdir() if p.name.endswith(".lock")]
    except OSError:
        return removed
    for lock in locks:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # held: its session is alive
        folder = lock.with_suffix("")
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            folder.with_name(folder.name + ".empty").unlink()
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)
        removed.append(folder)
    return removed


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """How to start one confined command: exec `argv` with `env` added to the caller's
    environment, running `preexec` in the forked child before the exec (a subprocess
    `preexec_fn`), then call `close()` in the parent once the child is started (or failed to).

    Attributes:
        argv: the command line to exec.
        env: variables to add (e.g. `TMPDIR`).
        preexec: the child-side confinement, or None when `argv` confines itself.
    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=lambda: {})
    preexec: Callable[[], None] | None = None
    _close: Callable[[], None] | None = None

    def close(self) -> None:
        """Release what the parent held for the start (idempotent enough: call once)."""
        if self._close is not None:
            self._close()


class Sandbox(ABC):
    """A way to run a command confined; `wrap` is pure string work after the first call (which
    creates the private temp folder), so calling it per command costs microseconds."""

    kind: ClassVar[SandboxMechanism]

    def __init__(self) -> None:
        self._tmp: Path | None = None
        self._lock_fd: int | None = None

    @property
    def tmp_dir(self) -> Path:
        """The private temp folder (created on first use, removed at interpreter exit; one
        left behind by a killed process is removed by the next `tmp_dir` of any process, see
        `clean_stale_tmp`). It lives in `tmp_parent()` (mode 0700), which every sandbox hides
        from commands: only its own folder is visible to a session's commands (as /tmp)."""
        if self._tmp is None:
            # under /var/tmp, not /tmp: mounted on /tmp, it keeps its own path valid ($TMPDIR)
            parent = tmp_parent()
            parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(parent)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                raise OSError(f"{parent} is not a folder of this user; refusing to use it")
            if st.st_mode & 0o077:
                os.chmod(parent, 0o700)
            clean_stale_tmp(parent)
            path = Path(tempfile.mkdtemp(prefix=f"{self.kind}-{os.getpid()}-", dir=parent))
            lock = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
            self._lock_fd = lock

            def _remove() -> None:
                shutil.rmtree(path, ignore_errors=True)
                with contextlib.suppress(OSError):
                    os.unlink(f"{path}.empty")
                with contextlib.suppress(OSError):
                    os.unlink(f"{path}.lock")
                with contextlib.suppress(OSError):
                    os.close(lock)

            atexit.register(_remove)
            self._tmp = path
        return self._tmp

    @property
    def empty_file(self) -> Path:
        """An empty read-only file beside the private temp folder (`<tmp_dir>.empty`, outside
        what commands may write): what covers a masked file (`SandboxConfig.masked`)."""
        path = self.tmp_dir.with_name(self.tmp_dir.name + ".empty")
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o444)
            os.close(fd)
        return path

    def launcher_argv(
        self, cfg: SandboxConfig, extra: Sequence[str] = (), python: str = sys.executable
    ) -> list[str]:
        """The start of a command line through the stdlib-only launcher
        (`tether.sandbox.launcher`), run by `python` with `-I -S -B`, with `extra` options and
        the unix-socket guard's options for `cfg` (`guard_options`); `--` and the command
        follow."""
        return [*launcher_prefix(python), *extra, *self.guard_options(cfg)]

    def guard_options(self, cfg: SandboxConfig) -> list[str]:
        """The launcher's unix-socket guard options for `cfg`: the program, where sockets may
        be connected to, whether abstract sockets pass (`socket_folders`, `abstract_ok`).
        None when `cfg.unix_guard` is off or the guard does not work here (a warning once)."""
        if not cfg.unix_guard or (program := guard_program_or_warn()) is None:
            return []
        out = ["--guard", program.hex()]
        for p in self.socket_folders(cfg):
            out += ["--socket", str(p)]
        if self.abstract_ok(cfg):
            out.append("--abstract")
        return out

    def socket_folders(self, cfg: SandboxConfig) -> tuple[Path, ...]:
        """Where a command's own unix sockets may be: `cfg.socket_folders()` (subclasses add
        their private /tmp)."""
        return cfg.socket_folders()

    def abstract_ok(self, cfg: SandboxConfig) -> bool:
        """Whether abstract unix sockets are kept to the sandbox (a network namespace)."""
        return not cfg.network

    @abstractmethod
    def wrap(self, argv: Sequence[str], cfg: SandboxConfig) -> list[str]:
        """The argv that runs `argv` (looked up on PATH inside) confined by `cfg`.

        The result is exec'd by the caller with the cwd and environment it wants; the exit
        status is `argv`'s own (126 when confinement failed and nothing ran).
        """

    def launch(self, argv: Sequence[str], cfg: SandboxConfig) -> Launch:
        """The cheapest way to start `argv` confined when the caller spawns it itself (the
        `bash` tool). Defaults to `Launch(argv=self.wrap(argv, cfg))`.

        Raises:
            OSError: the confinement could not be prepared (nothing is started then).
        """
        return Launch(argv=self.wrap(argv, cfg))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def launcher_prefix(python: str = sys.executable) -> list[str]:
    """`python -I -S -B <tether/sandbox/launcher.py>`: the stdlib-only launcher, by path."""
    return [python, "-I", "-S", "-B", str(Path(__file__).with_name("launcher.py"))]


@functools.cache
def guard_program_or_warn() -> bytes | None:
    """The unix-socket guard's program (`tether.sandbox.seccomp.guard_program`), or None with
    one warning (logged once per process) when it does not work here."""
    from tether.sandbox import seccomp

    why = seccomp.guard_unavailable()
    if why is not None:
        log.warning("unix sockets outside the sandbox stay reachable from commands: %s", why)
        return None
    return seccomp.guard_program()
