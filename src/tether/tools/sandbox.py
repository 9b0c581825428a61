"""The OS sandbox around tool subprocesses: bubblewrap, else Landlock, else none.

Owns: `SandboxConfig` (what one command may touch), `Sandbox` with its two kinds (`BwrapSandbox`,
`LandlockSandbox`) whose `wrap(argv, cfg)` returns the argv that runs `argv` confined (for any
subprocess, e.g. the tool worker) and whose `launch(argv, cfg)` is the cheapest way for a caller
that spawns the process itself (`Launch`: argv, env additions, a child-side `preexec`),
`detect_sandbox()` (probe once per process, cached; `TETHER_SANDBOX` forces a kind) and
`SandboxUnavailableError`.
Does not own: running processes (callers pass the wrapped argv to their own `exec`: the `bash`
tool, the tool worker `python -m tether.tools.worker`), safe mode (`tether.tools.policy`), the
Landlock syscalls (`tether.tools.landlock`).

What is confined, under both kinds: writes only beneath `cfg.root` (or `cfg.write_paths`), a
private temp folder (one per `Sandbox` object, i.e. per process for the detected ones; removed
at exit, or by the next process after a kill -9) and `cfg.extra_writable`; `root/.git`,
`root/.tether` and `cfg.protected` are read-only; tether's own folders and the other sessions'
temp folders are hidden (`secret_dirs`); the rest of the file system stays readable; no
capabilities (even as root); network off unless `cfg.network`; `/run` is empty.
- bubblewrap: `--ro-bind / /`, `--bind root root`, `--ro-bind root/.git …`, `--bind <private
  tmp> /tmp`, an empty `/run` (the host's service sockets: docker, D-Bus; the resolver's folder
  re-bound read-only when the network is on), fresh `/dev` and `/proc`, `--unshare-net` (a
  network namespace of its own, loopback only), `--cap-drop ALL`, `--die-with-parent`. Writes
  elsewhere fail with EROFS.
- Landlock: see `tether.tools.landlock`. Writes elsewhere fail with EACCES; the private temp
  folder is `$TMPDIR`, and also /tmp where the kernel grants a mount namespace (as does
  network-off: without a network namespace it covers TCP on ABI ≥ 4 only). `wrap` execs the stdlib-only
  launcher (a Python start-up, ~12 ms idle); `launch` confines the forked child instead (the
  parent builds the ruleset; the child makes a few syscalls before exec).

Limit, under both kinds: a path-based Unix socket that stays visible can still be connected to
(Landlock does not govern `connect`; bwrap hides `/run` and `/tmp`, where services put theirs,
but a socket elsewhere, e.g. under `/var/tmp`, is reachable).

No `--new-session` and no PID namespace by default: the command stays in the caller's process
group, so killing that group on timeout/cancel kills the whole tree (bwrap included), and
background processes that let go of the output keep running as they do unsandboxed. A new
session would only guard against TIOCSTI on a controlling terminal, which tool subprocesses do
not have (they are started in their own session with stdin from /dev/null). `isolate_pids=True`
adds `--unshare-pid` (the command can then neither see nor signal other processes; its
background processes end with it, and with `--die-with-parent` a kill -9 of the harness ends
the whole tree). The `bash` tool sets it: a process-group kill from outside still reaches every
process in the namespace.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from tether.errors import ConfigError
from tether.tools import landlock

SandboxKind = Literal["bwrap", "landlock"]
SANDBOX_ENV = "TETHER_SANDBOX"
"""Environment variable forcing the sandbox choice: `bwrap`, `landlock`, `none` or `auto`."""

PROBE_TIMEOUT_S = 10.0


class SandboxUnavailableError(ConfigError):
    """A sandbox kind was asked for (argument or `TETHER_SANDBOX`) but does not work here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """What one confined command may touch.

    Attributes:
        root: the working folder (a real path); writable, except its `.git`.
        network: True to allow network access.
        extra_writable: further folders the command may write (e.g. a build cache).
        extra_readable: folders that must stay visible, read-only, even where the sandbox
            hides their parent (a private `/tmp`): e.g. a tool folder or the interpreter's
            prefix for a tool worker.
        isolate_pids: bwrap: a PID namespace (see the module docstring); the Landlock
            launcher always makes one where the kernel allows and reaps every descendant.
        write_paths: when set, the only writable folders or files of the root (it is bound
            read-only otherwise): the settings' `tools.write_paths`, expanded.
        protected: further read-only folders (tool folders), besides `root/.git` and
            `root/.tether`.
        hidden: folders no command may read (tether's config, data and cache folders, other
            sessions' private temp folders); None: `secret_dirs()`.
        writable_protected: the user's opt-in (`tools.allow_protected_writes`): `.git` and
            `.tether` stay writable.
    """

    root: Path
    network: bool = False
    extra_writable: tuple[Path, ...] = ()
    extra_readable: tuple[Path, ...] = ()
    isolate_pids: bool = False
    write_paths: tuple[Path, ...] | None = None
    protected: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] | None = None
    writable_protected: bool = False

    def writable(self) -> tuple[Path, ...]:
        """The writable paths: the root (or `write_paths`), then `extra_writable`."""
        own = (self.root,) if self.write_paths is None else self.write_paths
        return (*own, *self.extra_writable)

    def readonly(self) -> tuple[Path, ...]:
        """Paths kept read-only: `root/.git` and `root/.tether` when present, `protected`, then
        `extra_readable` and this harness's own interpreter and package where they live under
        `/tmp` (which the sandbox replaces by a private folder; a checkout or venv under
        `/tmp` must still run) — existing ones, de-duplicated; the outside ones only when not
        inside `root`."""
        out: list[Path] = []
        own = () if self.writable_protected else (self.root / ".git", self.root / ".tether")
        for p in (*own, *self.protected):
            if p.exists() and p not in out:
                out.append(p)
        for p in (*self.extra_readable, *_harness_under_tmp()):
            if p.exists() and not p.is_relative_to(self.root) and p not in out:
                out.append(p)
        return tuple(out)

    def hidden_dirs(self) -> tuple[Path, ...]:
        """The existing hidden folders, minus any that holds the root or a writable path
        (hiding those would hide the work itself)."""
        keep = (self.root, *self.writable(), *self.extra_readable)
        out: list[Path] = []
        for p in secret_dirs() if self.hidden is None else self.hidden:
            if p.is_dir() and not any(k.is_relative_to(p) for k in keep) and p not in out:
                out.append(p)
        return tuple(out)


def secret_dirs() -> tuple[Path, ...]:
    """tether's own folders, which no tool subprocess may read (issue 11): the user config
    folder (`TETHER_CONFIG_DIR` or platformdirs': settings, the credential file, approvals),
    the sessions folder (`$TETHER_HOME/sessions` or platformdirs' data folder), the cache
    folder, and the parent of every session's private temp folder (`tmp_parent()`). Real
    paths; existing or not."""
    import platformdirs

    config = os.environ.get("TETHER_CONFIG_DIR", "")
    home = os.environ.get("TETHER_HOME", "")
    found = [
        Path(config).expanduser() if config else platformdirs.user_config_path("tether"),
        Path(home).expanduser() / "sessions" if home else platformdirs.user_data_path("tether"),
        platformdirs.user_cache_path("tether"),
        tmp_parent(),
    ]
    return tuple(Path(os.path.realpath(p)) for p in found)


def tmp_parent() -> Path:
    """The folder holding every session's private temp folder: `/var/tmp/tether-<uid>` (else
    under the system temp folder), mode 0700. Not created here."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else tempfile.gettempdir()
    return Path(os.path.realpath(base)) / f"tether-{os.getuid()}"


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
            lock.unlink()
        os.close(fd)
        removed.append(folder)
    return removed


@functools.cache
def _harness_under_tmp() -> tuple[Path, ...]:
    """The interpreter (venv and base prefix, the executable's folder) and the `tether`
    package's folder, resolved, where they are under `/tmp`."""
    import tether

    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    found.append(Path(tether.__file__).resolve().parents[1])
    tmp = Path("/tmp").resolve()
    return tuple(dict.fromkeys(p.resolve() for p in found if p.resolve().is_relative_to(tmp)))


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

    kind: ClassVar[SandboxKind]

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
                    os.unlink(f"{path}.lock")
                with contextlib.suppress(OSError):
                    os.close(lock)

            atexit.register(_remove)
            self._tmp = path
        return self._tmp

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
        if not cfg.network:
            out.append("--unshare-net")
        if cfg.isolate_pids:
            out.append("--unshare-pid")
        out.append("--")
        out.extend(argv)
        return out


class LandlockSandbox(Sandbox):
    """Landlock via the `tether.tools.landlock` launcher run by this Python (`-I -S`: no
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
def _bwrap() -> BwrapSandbox | None:
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


@functools.cache
def _landlock() -> LandlockSandbox | None:
    abi = landlock.abi_version()
    return LandlockSandbox(abi) if abi >= 1 else None


def available(kind: SandboxKind) -> Sandbox | None:
    """The sandbox of `kind` if it works on this machine (probed once per process), else None."""
    return _bwrap() if kind == "bwrap" else _landlock()


def detect_sandbox(kind: str | None = None) -> Sandbox | None:
    """The sandbox to use: bubblewrap if it works here, else Landlock if the kernel has it,
    else None (the caller must then run in safe mode).

    Args:
        kind: `bwrap`, `landlock`, `none` or `auto`; None reads `TETHER_SANDBOX` (default
            `auto`).

    Returns:
        A (shared, cached) `Sandbox`, or None for `none` or when nothing works in `auto`.

    Raises:
        SandboxUnavailableError: a forced kind does not work on this machine.
        ConfigError: an unknown kind.
    """
    choice = (kind if kind is not None else os.environ.get(SANDBOX_ENV, "auto")).strip().lower()
    if choice in ("", "auto"):
        return _bwrap() or _landlock()
    if choice == "none":
        return None
    if choice in ("bwrap", "landlock"):
        found = available("bwrap" if choice == "bwrap" else "landlock")
        if found is None:
            hint = (
                "install bubblewrap (e.g. `apt-get install bubblewrap`) and allow user namespaces"
                if choice == "bwrap"
                else "this kernel has no Landlock (Linux ≥ 5.13 with landlock in `lsm=`)"
            )
            raise SandboxUnavailableError(f"sandbox {choice!r} is not available here: {hint}")
        return found
    raise ConfigError(f"{SANDBOX_ENV}={choice!r}: use bwrap, landlock, none or auto")
