"""Landlock (Linux ≥ 5.13) through raw syscalls: what the Landlock sandbox's launcher
(`tether.sandbox.launcher`) and its in-child mode do to confine a command.

Owns: `abi_version()` (0: no Landlock), `build_ruleset()` + `enter()` (the two halves of
confining a process: a parent builds the ruleset, a forked child enters it), `confine()` (both).
Does not own: choosing a sandbox, building the launcher's argv (`tether.sandbox.landlock_sandbox`),
the launcher itself and its reaper (`tether.sandbox.launcher`, `tether.sandbox.reaper`), the
unix-socket guard (`tether.sandbox.unixguard`).

This module imports only the standard library, so the launcher starts with `python -I -S` in
about 12 ms (no site-packages, no tether package import). Syscall numbers 444/445/446 are the
same on x86_64 and aarch64 (the unified syscall table); the ABI rights and struct layouts are
from the kernel's `include/uapi/linux/landlock.h` and Documentation/userspace-api/landlock.rst.

What the launcher enforces, in this order:
1. A private mount namespace (as root; otherwise a user namespace mapping the caller's own
   uid/gid, so the identity does not change) in which the private temp folder (`--tmp`) is
   mounted on /tmp (the working folder re-bound at its own path if it lies under /tmp), each
   `--ro` path (every `.git` of the project, `.tether`) is re-mounted read-only and each
   `--mask` path (the dotenv files the file tools refuse) is covered by an empty read-only file
   (a folder: an empty read-only tmpfs); without `--net`, a new network
   namespace (loopback only). If the kernel refuses namespaces (unprivileged user namespaces
   disabled), this step is skipped: `.git` then stays writable, the masked files readable,
   /tmp is not writable (`$TMPDIR` is), and network-off relies on step 3 alone.
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

4. The launcher then runs the command as its child (`tether.sandbox.launcher`): with the PID
   namespace of step 1 (root, or a user namespace) the command is that namespace's init. When
   the command exits, every process it left behind (nohup, setsid, double fork) is SIGKILLed
   and reaped; killing the launcher (the harness gone: PR_SET_PDEATHSIG) ends the namespace.
With `--hide P`, READ_FILE is handled too and granted everywhere except beneath the `P`s
(tether's config/data folders, other sessions' temp folders): their files cannot be read
(names can still be listed). /dev/shm is not writable.

Exit status: the command's own (a fatal signal re-raised); 126 when Landlock is unavailable or
the restriction failed (the command is then never run), 127 when the command is not found.
"""

from __future__ import annotations

import ctypes
import os

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
DEVICE_DIRS = ("/dev/pts",)
"""Not /dev/shm: a file there outlives the command."""

PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWPID = 0x20000000
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
    readonly: Sequence[str],
    network: bool,
    tmp: str | None = None,
    keep: Sequence[str] = (),
    pid_ns: bool = False,
    hidden: Sequence[str] = (),
    keep_ro: Sequence[str] = (),
    masks: Sequence[str] = (),
    empty: str | None = None,
) -> bool:
    """Step 1: a mount namespace where `tmp` is mounted on /tmp (the `keep` paths under /tmp,
    e.g. the working folder, re-bound at their own paths so they stay visible), `readonly`
    paths are re-mounted read-only and /run (the host's service sockets: docker, D-Bus) is an
    empty tmpfs (the resolver's folder re-bound when `network`); plus a network namespace
    without `network`, and with `pid_ns` a PID namespace for the children forked next (tried
    without it when refused). Each `hidden` folder is covered by an empty read-only tmpfs (the
    `keep` paths and `tmp` inside one bound back; those in `keep_ro` read-only, since a bind
    inside the writable private tmp would inherit its Landlock write right). Each of `masks`
    is covered read-only by the empty file `empty` (a folder: by an empty tmpfs). Returns
    False when the kernel refused; nothing changed then."""
    net = 0 if network else CLONE_NEWNET
    uid, gid = os.geteuid(), os.getegid()
    # root may make namespaces directly; anyone else through a user namespace mapping their own
    # uid/gid (the identity seen by the command does not change)
    flags = CLONE_NEWNS | net | (0 if uid == 0 else CLONE_NEWUSER)
    if not (pid_ns and _libc.unshare(flags | CLONE_NEWPID) == 0) and _libc.unshare(flags) != 0:
        return False
    if flags & CLONE_NEWUSER:
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
        _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount private")
    # the empty file may lie in a folder about to be hidden: hold it first
    blank = os.open(empty, os.O_PATH | os.O_CLOEXEC) if empty is not None and masks else -1
    covered = [h for h in hidden if os.path.isdir(h)]
    if tmp is not None and not _is_under(tmp, "/tmp"):
        covered.append("/tmp")
    # handles on what must stay visible, taken before anything is covered
    visible = [*keep_ro, *keep, *([tmp] if tmp is not None else [])]
    held = [
        (p, os.open(p, os.O_PATH | os.O_CLOEXEC))
        for p in dict.fromkeys(visible)
        if any(_is_under(p, c) for c in covered) and os.path.exists(p)
    ]
    if tmp is not None and not _is_under(tmp, "/tmp"):
        _check(_libc.mount(os.fsencode(tmp), b"/tmp", None, MS_BIND | MS_REC, None), "bind /tmp")
    for h in hidden:
        if os.path.isdir(h):  # tether's own folders, other sessions' temp folders: empty
            _check(_libc.mount(b"tmpfs", os.fsencode(h), b"tmpfs", 0, b"mode=0755"), f"hide {h}")
    for p, fd in held:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(p, exist_ok=True)  # a mount point inside the private tmp / a tmpfs
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
        src = os.fsencode(f"/proc/self/fd/{fd}")
        _check(_libc.mount(src, os.fsencode(p), None, MS_BIND | MS_REC, None), f"bind {p}")
        os.close(fd)
        if p in keep_ro:
            flags = MS_BIND | MS_REMOUNT | MS_RDONLY
            _check(_libc.mount(None, os.fsencode(p), None, flags, None), f"remount {p}")
    for h in hidden:
        if os.path.isdir(h):
            b = os.fsencode(h)
            _check(_libc.mount(None, b, None, MS_REMOUNT | MS_RDONLY, None), f"remount {h}")
    _empty_run(network, [k for k in keep if _is_under(k, "/run")])
    for p in masks:
        _mask(p, f"/proc/self/fd/{blank}" if blank >= 0 else None)
    if blank >= 0:
        os.close(blank)
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


def _empty_run(network: bool, keep: Sequence[str] = ()) -> None:
    """An empty tmpfs on /run (the resolver's folder bound back in when `network`, and each
    of `keep`: unix sockets the user let in)."""
    if not os.path.isdir("/run"):
        return
    wanted = [*(["/run/systemd/resolve"] if network else []), *keep]
    held = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in wanted if os.path.exists(p)]
    _check(_libc.mount(b"tmpfs", b"/run", b"tmpfs", 0, b"mode=0755"), "tmpfs /run")
    for p, fd in held:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
        src = os.fsencode(f"/proc/self/fd/{fd}")
        _check(_libc.mount(src, os.fsencode(p), None, MS_BIND | MS_REC, None), f"bind {p}")
        os.close(fd)


def _mask(path: str, empty: str | None) -> None:
    """Cover `path` read-only: a folder by an empty tmpfs, a file by the empty file `empty`."""
    b = os.fsencode(path)
    if os.path.isdir(path):
        _check(_libc.mount(b"tmpfs", b, b"tmpfs", 0, b"mode=0555"), f"mask {path}")
        _check(_libc.mount(None, b, None, MS_REMOUNT | MS_RDONLY, None), f"remount {path}")
    elif empty is not None and os.path.lexists(path):
        _check(_libc.mount(os.fsencode(empty), b, None, MS_BIND, None), f"mask {path}")
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        _check(_libc.mount(None, b, None, flags, None), f"remount {path}")


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
            allowed_access=rights if is_dir else rights & (FILE_RIGHTS | READ_FILE),
            parent_fd=fd,
        )
        _check(
            _libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(attr), 0),
            f"landlock_add_rule {path}",
        )
    finally:
        os.close(fd)


def readable_roots(hidden: Sequence[str]) -> list[str]:
    """The complement of `hidden` as a list of hierarchies: for every folder on the way from
    `/` to a hidden path, each entry that is neither hidden nor on such a way. Granting
    READ_FILE beneath these grants it everywhere except beneath `hidden` (Landlock rules only
    allow, so a hole is made by leaving it out). Entries created later in a folder on the way
    (e.g. a new file in the home folder) are not covered."""
    hidden_n: list[str] = [os.path.normpath(str(h)) for h in hidden]
    ways: set[str] = set()
    for h in hidden_n:
        p: str = h
        while p != "/":
            p = os.path.dirname(p)
            ways.add(p)
    out: list[str] = []
    for folder in sorted(ways):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            full = os.path.join(folder, name)
            if full in ways or full in hidden_n:
                continue
            out.append(full)
    return out


def build_ruleset(
    writable: Sequence[str], *, network: bool, abi: int, hidden: Sequence[str] = ()
) -> int:
    """A Landlock ruleset fd (close it when done): every write right beneath `writable` and
    the usual devices, nothing elsewhere; TCP bind/connect denied without `network` (ABI ≥ 4);
    signals and abstract unix sockets scoped (ABI ≥ 6). With `hidden`: reading files
    (READ_FILE) is allowed everywhere except beneath `hidden` (listing folders stays allowed).

    Raises:
        OSError: Landlock is unavailable (ENOSYS/EOPNOTSUPP) or a syscall failed.
    """
    if abi < 1:
        raise OSError(38, "Landlock is not supported by this kernel")
    rights = write_rights(abi)
    read = READ_FILE if hidden else 0
    attr = _RulesetAttr(handled_access_fs=rights | read)
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
            _add_path(ruleset, p, rights | read)
        for p in DEVICE_FILES:
            _add_path(ruleset, p, FILE_RIGHTS | read)
        if read:
            for p in readable_roots(hidden):
                _add_path(ruleset, p, read)
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
    pid_ns: bool = False,
    hidden: Sequence[str] = (),
    keep_ro: Sequence[str] = (),
    masks: Sequence[str] = (),
    empty: str | None = None,
) -> bool:
    """Steps 1-3 for the calling process: namespaces (when the kernel allows), no capabilities
    (as root), no new privileges, then the Landlock domain of `ruleset`. Irreversible.

    Meant for a freshly forked child too (a subprocess `preexec_fn`, despite CPython's general
    warning about preexec_fn and threads): it imports nothing, takes no Python-level lock and
    only makes syscalls through ctypes, so no lock held by another thread at fork time is
    needed.

    Returns:
        Whether step 1 happened (namespaces: the private /tmp, the read-only and masked paths).

    Raises:
        OSError: a syscall failed (the caller must not run the command then).
    """
    ro = [p for p in readonly if os.path.exists(p)]
    mounted = _namespaces(ro, network, tmp, keep, pid_ns, hidden, keep_ro, masks, empty)
    if os.geteuid() == 0:
        _drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    _check(_libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    return mounted


def confine(
    writable: Sequence[str],
    *,
    readonly: Sequence[str] = (),
    network: bool,
    tmp: str | None = None,
    abi: int | None = None,
    hidden: Sequence[str] = (),
    pid_ns: bool = False,
    keep: Sequence[str] = (),
    visible: Sequence[str] = (),
    masks: Sequence[str] = (),
    empty: str | None = None,
) -> bool:
    """Confine the calling process (`build_ruleset` + `enter`); what it execs stays confined.
    Returns whether the namespaces of step 1 were made.

    Args:
        writable: paths beneath which writes stay allowed.
        readonly: paths (inside `writable`) re-mounted read-only where namespaces are allowed.
        network: False cuts the network (see the module docstring).
        tmp: the private temp folder: writable, and mounted on /tmp where namespaces are
            allowed (it must not itself be under /tmp for that).
        abi: the Landlock ABI; None asks the kernel.
        hidden: folders whose files may not be read.
        pid_ns: make a PID namespace for the children forked next, where allowed.
        keep: further paths that must stay visible (not writable) under a private /tmp: the
            working folder when only some of its folders are writable.
        visible: paths (unix sockets the user let in) bound back where the sandbox empties
            their folder (/tmp, /run).
        masks: paths covered read-only by the empty file `empty` (folders: by an empty tmpfs).

    Raises:
        OSError: Landlock is unavailable or a syscall failed.
    """
    allowed = [*writable, *([tmp] if tmp else [])]
    ruleset = build_ruleset(
        allowed, network=network, abi=abi_version() if abi is None else abi, hidden=hidden
    )
    try:
        return enter(
            ruleset,
            readonly=readonly,
            network=network,
            tmp=tmp,
            keep=[*writable, *readonly, *visible],
            pid_ns=pid_ns,
            hidden=hidden,
            keep_ro=keep,
            masks=masks,
            empty=empty,
        )
    finally:
        os.close(ruleset)
