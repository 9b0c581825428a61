"""Landlock (Linux ≥ 5.13) through raw syscalls, and the launcher the Landlock sandbox execs.

Owns: `abi_version()` (0 when the kernel has no Landlock), `build_ruleset()` + `enter()` (the
two halves of confining a process, so a parent can build the ruleset and a forked child enter
it), `confine()` (both, for the calling process), and `main()`, the launcher:
`python -I -S .../landlock.py [--write P]... [--ro P]... [--net] [--tmp DIR] -- argv...`.
Does not own: choosing a sandbox or building the launcher's argv (`tether.tools.sandbox`).

This module imports only the standard library, so the launcher starts with `python -I -S` in
about 12 ms (no site-packages, no tether package import). Syscall numbers 444/445/446 are the
same on x86_64 and aarch64 (the unified syscall table); the ABI rights and struct layouts are
from the kernel's `include/uapi/linux/landlock.h` and Documentation/userspace-api/landlock.rst.

What the launcher enforces, in this order:
1. A private mount namespace (as root; otherwise a user namespace mapping the caller's own
   uid/gid, so the identity does not change) in which the private temp folder (`--tmp`) is
   mounted on /tmp (the working folder re-bound at its own path if it lies under /tmp) and each
   `--ro` path (the project's `.git`) is re-mounted read-only; without `--net`, a new network
   namespace (loopback only). If the kernel refuses namespaces (unprivileged user namespaces
   disabled), this step is skipped: `.git` then stays writable, /tmp is not writable (`$TMPDIR`
   is), and network-off relies on step 3 alone.
2. As root: every capability is dropped from the bounding set, so the command runs without
   capabilities (it cannot load modules, remount, or bypass file permissions).
3. `PR_SET_NO_NEW_PRIVS`, then one Landlock layer: every write right (write, truncate, create,
   remove, rename/link) is allowed only beneath the `--write` paths and a few devices (/dev/null,
   /dev/tty, /dev/pts, /dev/shm, ...); reads and execution stay allowed everywhere. With ABI ≥ 4
   and no `--net`, TCP bind and connect are denied (UDP is not covered by Landlock: on older
   ABIs, or for UDP, network-off is best effort unless step 1 made a network namespace). With
   ABI ≥ 6, signals and abstract unix sockets are scoped to the sandbox (the command cannot
   signal the harness or other processes outside).
A Landlock domain cannot be left, and a landlocked process cannot mount or unmount, so the
read-only `.git` mount cannot be undone from inside.

Exit status: the command's own (the launcher execs it); 126 when Landlock is unavailable or the
restriction failed (the command is then never run), 127 when the command is not found.
"""

from __future__ import annotations

import ctypes
import os
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the launcher ~8 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FILE_RIGHTS = WRITE_FILE | TRUNCATE
"""Write rights that apply to a regular file or device (the rest apply to directories)."""

DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx")
DEVICE_DIRS = ("/dev/pts", "/dev/shm")

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (
        ("allowed_access", ctypes.c_uint64),
        ("parent_fd", ctypes.c_int32),
    )


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version (1..), or 0 when Landlock is absent or disabled."""
    try:
        v = int(_libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION))
    except (AttributeError, OSError):
        return 0
    return max(v, 0)


def write_rights(abi: int) -> int:
    """Every write-type filesystem right the given ABI knows (the rights the sandbox handles)."""
    rights = (
        WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM
    )
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _is_under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _namespaces(
    readonly: Sequence[str], network: bool, tmp: str | None = None, keep: Sequence[str] = ()
) -> bool:
    """Step 1: a mount namespace where `tmp` is mounted on /tmp (the `keep` paths under /tmp,
    e.g. the working folder, re-bound at their own paths so they stay visible) and `readonly`
    paths are re-mounted read-only; plus a network namespace without `network`. Returns False
    when the kernel refused; nothing changed then."""
    if not readonly and network and tmp is None:
        return True  # nothing to isolate: skip the namespace cost
    net = 0 if network else CLONE_NEWNET
    uid, gid = os.geteuid(), os.getegid()
    # root may make namespaces directly; anyone else through a user namespace mapping their own
    # uid/gid (the identity seen by the command does not change)
    flags = CLONE_NEWNS | net | (0 if uid == 0 else CLONE_NEWUSER)
    if _libc.unshare(flags) != 0:
        return False
    if flags & CLONE_NEWUSER:
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
        _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount private")
    if tmp is not None and not _is_under(tmp, "/tmp"):
        # handles on what must stay visible, taken before /tmp is covered
        held = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in keep if _is_under(p, "/tmp")]
        _check(_libc.mount(os.fsencode(tmp), b"/tmp", None, MS_BIND | MS_REC, None), "bind /tmp")
        for p, fd in held:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(p, exist_ok=True)  # a mount point inside the private tmp
            else:
                os.makedirs(os.path.dirname(p), exist_ok=True)
                os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
            src = os.fsencode(f"/proc/self/fd/{fd}")
            _check(_libc.mount(src, os.fsencode(p), None, MS_BIND | MS_REC, None), f"bind {p}")
            os.close(fd)
    for p in readonly:
        b = os.fsencode(p)
        _check(_libc.mount(b, b, None, MS_BIND | MS_REC, None), f"bind {p}")
        _check(
            _libc.mount(None, b, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None),
            f"remount {p} read-only",
        )
    # the cwd still points into the mounts as they were: walk to it again (no contextlib: the
    # launcher keeps its imports minimal)
    try:  # noqa: SIM105
        os.chdir(os.getcwd())
    except OSError:
        pass
    return True


def _drop_capabilities() -> None:
    """Step 2 (root only): empty the bounding set so the exec'd command has no capabilities."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # EINVAL past the last capability the kernel knows
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a missing device or folder needs no rule
    try:
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
        attr = _PathBeneathAttr(
            allowed_access=rights if is_dir else rights & FILE_RIGHTS, parent_fd=fd
        )
        _check(
            _libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(attr), 0),
            f"landlock_add_rule {path}",
        )
    finally:
        os.close(fd)


def build_ruleset(writable: Sequence[str], *, network: bool, abi: int) -> int:
    """A Landlock ruleset fd (close it when done): every write right beneath `writable` and
    the usual devices, nothing elsewhere; TCP bind/connect denied without `network` (ABI ≥ 4);
    signals and abstract unix sockets scoped (ABI ≥ 6).

    Raises:
        OSError: Landlock is unavailable (ENOSYS/EOPNOTSUPP) or a syscall failed.
    """
    if abi < 1:
        raise OSError(38, "Landlock is not supported by this kernel")
    rights = write_rights(abi)
    attr = _RulesetAttr(handled_access_fs=rights)
    size = 8
    if abi >= 4:
        size = 16
        if not network:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    if abi >= 6:
        size = 24
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    ruleset = _check(
        _libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    try:
        for p in (*writable, *DEVICE_DIRS):
            _add_path(ruleset, p, rights)
        for p in DEVICE_FILES:
            _add_path(ruleset, p, FILE_RIGHTS)
    except OSError:
        os.close(ruleset)
        raise
    return ruleset


def enter(
    ruleset: int,
    *,
    readonly: Sequence[str],
    network: bool,
    tmp: str | None = None,
    keep: Sequence[str] = (),
) -> None:
    """Steps 1-3 for the calling process: namespaces (when the kernel allows), no capabilities
    (as root), no new privileges, then the Landlock domain of `ruleset`. Irreversible.

    Meant for a freshly forked child too (a subprocess `preexec_fn`, despite CPython's general
    warning about preexec_fn and threads): it imports nothing, takes no Python-level lock and
    only makes syscalls through ctypes, so no lock held by another thread at fork time is
    needed.

    Raises:
        OSError: a syscall failed (the caller must not run the command then).
    """
    _namespaces([p for p in readonly if os.path.exists(p)], network, tmp, keep)
    if os.geteuid() == 0:
        _drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    _check(_libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")


def confine(
    writable: Sequence[str],
    *,
    readonly: Sequence[str] = (),
    network: bool,
    tmp: str | None = None,
    abi: int | None = None,
) -> None:
    """Confine the calling process (`build_ruleset` + `enter`); what it execs stays confined.

    Args:
        writable: paths beneath which writes stay allowed.
        readonly: paths (inside `writable`) re-mounted read-only where namespaces are allowed.
        network: False cuts the network (see the module docstring).
        tmp: the private temp folder: writable, and mounted on /tmp where namespaces are
            allowed (it must not itself be under /tmp for that).
        abi: the Landlock ABI; None asks the kernel.

    Raises:
        OSError: Landlock is unavailable or a syscall failed.
    """
    allowed = [*writable, *([tmp] if tmp else [])]
    ruleset = build_ruleset(allowed, network=network, abi=abi_version() if abi is None else abi)
    try:
        enter(ruleset, readonly=readonly, network=network, tmp=tmp, keep=[*writable, *readonly])
    finally:
        os.close(ruleset)


def _parse(args: list[str]) -> tuple[list[str], list[str], bool, str | None, list[str]]:
    write: list[str] = []
    ro: list[str] = []
    network = False
    tmp: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return write, ro, network, tmp, args[i + 1 :]
        if a == "--net":
            network = True
            i += 1
            continue
        if a in ("--write", "--ro", "--tmp") and i + 1 < len(args):
            value = args[i + 1]
            if a == "--write":
                write.append(value)
            elif a == "--ro":
                ro.append(value)
            else:
                tmp = value
            i += 2
            continue
        raise ValueError(f"unexpected argument {a!r}")
    raise ValueError("missing `-- command...`")


def main(args: Sequence[str] | None = None) -> int:
    """The launcher: confine, then exec the command (see the module docstring).

    Returns:
        Only on failure: 2 for bad arguments, 126 when confinement failed, 127 when the
        command was not found.
    """
    try:
        write, ro, network, tmp, command = _parse(list(sys.argv[1:] if args is None else args))
        if not command:
            raise ValueError("empty command")
    except ValueError as e:
        sys.stderr.write(f"tether sandbox (landlock): {e}\n")
        return 2
    try:
        confine(write, readonly=ro, network=network, tmp=tmp)
    except OSError as e:
        sys.stderr.write(f"tether sandbox (landlock): refusing to run unconfined: {e}\n")
        return 126
    if tmp:
        os.environ["TMPDIR"] = tmp
    try:
        os.execvp(command[0], command)
    except OSError as e:
        sys.stderr.write(f"tether sandbox (landlock): {command[0]}: {e.strerror}\n")
        return 127 if isinstance(e, FileNotFoundError) else 126


if __name__ == "__main__":
    sys.exit(main())
