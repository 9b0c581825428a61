"""The unix-socket guard's seccomp programs, built in the harness with libseccomp (`pyseccomp`).

Owns: `guard_program()` (the BPF bytes the launcher loads with a supervisor: every `connect`
notified) and `deny_program()` (for a command confined without a launcher: no unix socket but
`socketpair`), `guard_unavailable()` (why there is no guard here, or None).
Does not own: loading a program and answering its notifications (`tether.sandbox.unixguard`).

Both programs also refuse datagram unix sockets (`socket`/`socketpair` of type `SOCK_DGRAM` or
`SOCK_RAW`, which the kernel makes a datagram socket: `sendto` could name any path without a
`connect`) and `io_uring_setup` (io_uring's operations bypass seccomp). libseccomp adds the
architecture check (a call from another ABI, e.g. 32-bit x86 or x32, kills the process).
Built once per process (~13 ms).
"""

from __future__ import annotations

import errno
import functools
import os
import socket

from tether.sandbox import unixguard

_DATAGRAMS = (socket.SOCK_DGRAM, socket.SOCK_RAW)


def guard_unavailable() -> str | None:
    """Why the unix-socket guard cannot work on this machine, or None when it can."""
    if not unixguard.supported():
        return f"the unix-socket guard does not know the {os.uname().machine} architecture"
    try:
        guard_program()
    except (OSError, RuntimeError, ImportError) as e:
        return f"libseccomp is not usable ({e}): install libseccomp2"
    return None


@functools.cache
def guard_program() -> bytes:
    """Every `connect` to the supervisor; datagram unix sockets and io_uring refused.

    Raises:
        RuntimeError, OSError: libseccomp is missing or refused a rule.
    """
    return _build(notify=True)


@functools.cache
def deny_program() -> bytes:
    """No unix socket but `socketpair` (nothing to supervise); io_uring refused.

    Raises:
        RuntimeError, OSError: libseccomp is missing or refused a rule.
    """
    return _build(notify=False)


def _build(*, notify: bool) -> bytes:
    import pyseccomp as sc  # loads libseccomp (ctypes): only when a sandbox is used

    f = sc.SyscallFilter(sc.ALLOW)
    refuse = sc.ERRNO(errno.EACCES)
    unix = sc.Arg(0, sc.EQ, socket.AF_UNIX)
    if notify:
        f.add_rule(sc.NOTIFY, "connect")
        for kind in _DATAGRAMS:
            f.add_rule(refuse, "socket", unix, sc.Arg(1, sc.MASKED_EQ, 0xF, kind))
    else:
        f.add_rule(refuse, "socket", unix)
    for kind in _DATAGRAMS:
        f.add_rule(refuse, "socketpair", unix, sc.Arg(1, sc.MASKED_EQ, 0xF, kind))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "io_uring_setup")
    fd = os.memfd_create("tether-seccomp", os.MFD_CLOEXEC)
    with os.fdopen(fd, "w+b") as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()
