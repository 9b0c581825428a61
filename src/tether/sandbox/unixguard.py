"""The unix-socket guard: a sandboxed command may connect only to unix sockets inside the
sandbox, or to those the user let in.

Owns: `install` (load a seccomp BPF program, optionally with a user-notification listener),
`send_listener` / `recv_listener` (hand the listener from the filtered child to its parent)
and `Supervisor` (answers every `connect` of the filtered processes).
Does not own: the BPF program (`tether.sandbox.seccomp` builds it with libseccomp in the
harness; this module only loads the bytes), running the command (`tether.sandbox.launcher`).

Standard library only (the launcher runs with `python -I -S`).

How it holds: seccomp cannot read the address a `connect` names, so the filter hands every
`connect` to the supervisor (`SECCOMP_RET_USER_NOTIF`), a process outside the filter (the
launcher, the command's parent, in the same sandbox). The supervisor never lets the kernel
re-run the call (`SECCOMP_USER_NOTIF_FLAG_CONTINUE` would re-read memory the command can
change after the check): it takes its own copy of the address (`/proc/PID/mem`), its own
reference to the socket (`pidfd_getfd`), and makes the `connect` itself (in a forked helper):
- not a unix socket (TCP, UDP, ...): connected as asked (the sandbox's network rules apply);
- a pathname unix socket: opened `O_PATH` as the path resolves (relative paths against the
  command's working folder), and connected through `/proc/self/fd/N` to exactly the socket
  that was checked, only when its real path is below an allowed folder (the sandbox's
  writable folders, its private /tmp) or is (or is below) a path the user allowed; otherwise
  the command gets `EACCES` and a line on its stderr names the socket;
- an abstract unix socket: connected when `abstract` (a network namespace or Landlock's
  scoping keeps those to the sandbox), else refused.
The filter itself refuses datagram unix sockets (`socket`/`socketpair` of `SOCK_DGRAM` or
`SOCK_RAW`: `sendto` could name any path without a `connect`) and io_uring (its operations
bypass seccomp).
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the launcher ~8 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

_SECCOMP_NR = {"x86_64": 317, "aarch64": 277}
_CONNECT_NR = {"x86_64": 42, "aarch64": 203}
SYS_PIDFD_OPEN = 434
SYS_PIDFD_GETFD = 438
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
NOTIF_RECV = 0xC0502100
NOTIF_SEND = 0xC0182101
NOTIF_ID_VALID = 0x40082102
AF_UNIX = 1
SOL_SOCKET = 1
SO_DOMAIN = 39
EACCES, ECONNREFUSED, EFAULT, EPERM = 13, 111, 14, 1


class _Prog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class _Data(ctypes.Structure):
    _fields_ = (
        ("nr", ctypes.c_int),
        ("arch", ctypes.c_uint32),
        ("ip", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    )


class _Notif(ctypes.Structure):
    _fields_ = (
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("data", _Data),
    )


class _Resp(ctypes.Structure):
    _fields_ = (
        ("id", ctypes.c_uint64),
        ("val", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    )


_libc = ctypes.CDLL(None, use_errno=True)
_MACHINE = os.uname().machine


def supported() -> bool:
    """Whether this machine's architecture is one the guard knows (x86_64, aarch64)."""
    return _MACHINE in _SECCOMP_NR


def install(bpf: bytes, *, listen: bool) -> int:
    """Load the BPF program `bpf` (8-byte `sock_filter` records) on the calling thread, after
    `PR_SET_NO_NEW_PRIVS`; every process it starts inherits it. Irreversible.

    Returns:
        The notification listener's fd (close-on-exec) with `listen`, else 0.

    Raises:
        OSError: the architecture is unknown or the kernel refused the program.
    """
    if not supported():
        raise OSError(38, f"the unix-socket guard does not know the {_MACHINE} architecture")
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"PR_SET_NO_NEW_PRIVS: {os.strerror(err)}")
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _Prog(len=len(bpf) // 8, filter=ctypes.cast(buf, ctypes.c_void_p).value)
    flags = SECCOMP_FILTER_FLAG_NEW_LISTENER if listen else 0
    fd = int(
        _libc.syscall(_SECCOMP_NR[_MACHINE], SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")
    return fd


def send_listener(sock: int, listener: int) -> None:
    """Send `listener` over the unix socket `sock` (SCM_RIGHTS) and close it here."""
    import _socket

    s = _socket.socket(fileno=os.dup(sock))
    try:
        fds = listener.to_bytes(4, sys.byteorder, signed=True)
        s.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    finally:
        s.close()
        os.close(listener)


def recv_listener(sock: int) -> int:
    """Receive the listener `send_listener` sent over `sock`.

    Raises:
        OSError: none came (the child failed before sending it).
    """
    import _socket

    s = _socket.socket(fileno=os.dup(sock))
    try:
        _msg, anc, _flags, _addr = s.recvmsg(1, _socket.CMSG_SPACE(4))
    finally:
        s.close()
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(data) >= 4:
            return int.from_bytes(data[:4], sys.byteorder, signed=True)
    raise OSError(EFAULT, "the unix-socket guard's listener was not received")


def _inside(path: str, top: str) -> bool:
    top = top.rstrip("/") or "/"
    return path == top or path.startswith(top + "/") or top == "/"


class Supervisor:
    """Answers the `connect` calls of the processes under a listener (module docstring), in the
    calling thread: a process that made a PID namespace cannot start threads, so the checks
    run here and each `connect` itself in a forked helper (it may block; the helper answers
    the caller and exits). The checks stay in this process, the filtered processes'
    ancestor: reading another process's memory and file descriptors needs that (Yama's
    `ptrace_scope` 1).

    Args:
        allowed: folders whose unix sockets may be connected to (the sandbox's writable
            folders and private /tmp, as seen inside the sandbox) and the sockets (or folders
            of sockets) the user allowed.
        abstract: let abstract unix sockets through.
        name: how the refusal lines on stderr start.
    """

    def __init__(self, allowed: Sequence[str], *, abstract: bool, name: str) -> None:
        self.allowed = [os.path.normpath(a) for a in allowed]
        self.abstract = abstract
        self.name = name
        self.refused: set[str] = set()
        self.helpers: set[int] = set()

    def serve(self, listener: int, child: int) -> None:
        """Answer notifications from `listener` until process `child` (the command) exits
        (it is left for the caller to reap) or nothing is filtered any more."""
        import select

        pidfd = int(_libc.syscall(SYS_PIDFD_OPEN, child, 0))
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        if pidfd >= 0:
            poller.register(pidfd, select.POLLIN)
        try:
            while True:
                try:
                    ready = dict(poller.poll(1000 if self.helpers else None))
                except InterruptedError:
                    continue
                self._reap_helpers()
                if pidfd >= 0 and pidfd in ready:
                    return
                events = ready.get(listener, 0)
                if events & select.POLLIN:
                    self._one(listener)
                elif events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    return
        finally:
            if pidfd >= 0:
                os.close(pidfd)
            os.close(listener)

    def _reap_helpers(self) -> None:
        for pid in list(self.helpers):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.helpers.discard(pid)

    def _one(self, listener: int) -> None:
        notif = _Notif()
        if _libc.ioctl(listener, NOTIF_RECV, ctypes.byref(notif)) != 0:
            return  # ENOENT: the caller went away before we looked
        try:
            decided = self._check(listener, notif)
        except OSError as e:
            decided = e.errno or EPERM
        except Exception:
            decided = EPERM
        if isinstance(decided, int):
            _respond(listener, notif.id, decided)
            return
        sfd, addr, size, keep = decided
        try:
            pid = os.fork()
            if pid == 0:  # the helper: connect (it may block), answer, exit
                code = 1
                try:
                    _respond(listener, notif.id, _do_connect(sfd, addr, size))
                    code = 0
                finally:
                    os._exit(code)
            self.helpers.add(pid)
        except OSError as e:
            _respond(listener, notif.id, e.errno or EPERM)
        finally:
            os.close(sfd)
            if keep >= 0:
                os.close(keep)

    def _valid(self, listener: int, notif: _Notif) -> bool:
        ident = ctypes.c_uint64(notif.id)
        return _libc.ioctl(listener, NOTIF_ID_VALID, ctypes.byref(ident)) == 0

    def _check(self, listener: int, notif: _Notif) -> int | tuple[int, bytes, int, int]:
        """An errno to answer at once, or what to connect: (the caller's socket, here; the
        address; its length; an fd to close after, or -1)."""
        if notif.data.nr != _CONNECT_NR.get(_MACHINE):
            return EPERM
        pid = notif.pid  # the calling thread; pidfd_open wants its process (thread group)
        fd, ptr, size = notif.data.args[0], notif.data.args[1], notif.data.args[2] & 0xFFFFFFFF
        pidfd = int(_libc.syscall(SYS_PIDFD_OPEN, _thread_group(pid), 0))
        if pidfd < 0:
            return EPERM
        sfd = -1
        try:
            if not self._valid(listener, notif):  # the pid is the caller's, not a reuse
                return EPERM
            sfd = int(_libc.syscall(SYS_PIDFD_GETFD, pidfd, ctypes.c_int(fd), 0))
            if sfd < 0:
                return ctypes.get_errno() or EPERM
            addr = b""
            if ptr and size:
                mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
                try:
                    addr = os.pread(mem, min(size, 256), ptr)
                finally:
                    os.close(mem)
            if not self._valid(listener, notif):
                return EPERM
            domain = ctypes.c_int(0)
            length = ctypes.c_uint32(4)
            _libc.getsockopt(sfd, SOL_SOCKET, SO_DOMAIN, ctypes.byref(domain), ctypes.byref(length))
            if domain.value != AF_UNIX:
                decided: int | tuple[int, bytes, int, int] = (sfd, addr, size, -1)
            else:
                decided = self._unix(sfd, pid, addr, size)
            if not isinstance(decided, int):
                sfd = -1  # handed on
            return decided
        finally:
            if sfd >= 0:
                os.close(sfd)
            os.close(pidfd)

    def _unix(self, sfd: int, pid: int, addr: bytes, size: int) -> int | tuple[int, bytes, int, int]:
        path = addr[2:].split(b"\0", 1)[0] if len(addr) > 2 and addr[2] != 0 else b""
        if not path:  # abstract (a leading NUL) or unnamed
            if len(addr) > 2 and not self.abstract:
                self._say(f"an abstract unix socket ({addr[3:].decode(errors='replace')!r})")
                return EACCES
            return (sfd, addr, size, -1)
        if not path.startswith(b"/"):
            path = os.fsencode(os.readlink(f"/proc/{pid}/cwd")) + b"/" + path
        for own in (b"/proc/self/", b"/proc/thread-self/"):  # the caller's, not this process's
            if path.startswith(own):
                path = b"/proc/%d/" % pid + path[len(own) :]
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as e:
            return e.errno or ECONNREFUSED
        try:
            if not stat.S_ISSOCK(os.fstat(target).st_mode):
                return ECONNREFUSED
            real = os.readlink(f"/proc/self/fd/{target}")
        except OSError:
            os.close(target)
            raise
        if not any(_inside(real, a) for a in self.allowed):
            os.close(target)
            self._say(real)
            return EACCES
        via = AF_UNIX.to_bytes(2, sys.byteorder) + os.fsencode(f"/proc/self/fd/{target}") + b"\0"
        return (sfd, via, len(via), target)

    def _say(self, what: str) -> None:
        if what in self.refused or len(self.refused) >= 20:
            return
        self.refused.add(what)
        line = (
            f"{self.name}: connecting to {what} refused: a unix socket outside the sandbox "
            "(tools.allow_unix_sockets lets one in)\n"
        )
        try:  # noqa: SIM105
            os.write(2, line.encode(errors="replace"))
        except OSError:
            pass


def _thread_group(tid: int) -> int:
    """The process (thread group) id of thread `tid` (`Tgid:` in /proc/TID/status)."""
    try:
        with open(f"/proc/{tid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return tid


def _respond(listener: int, ident: int, error: int) -> None:
    resp = _Resp(id=ident, val=0, error=-error if error else 0, flags=0)
    _libc.ioctl(listener, NOTIF_SEND, ctypes.byref(resp))  # ENOENT: the caller is gone


def _do_connect(sfd: int, addr: bytes, size: int) -> int:
    n = len(addr) if not size or size > len(addr) else size
    buf = ctypes.create_string_buffer(addr, max(n, 1))
    if _libc.connect(sfd, buf, ctypes.c_uint32(n)) != 0:
        return ctypes.get_errno() or EPERM
    return 0
