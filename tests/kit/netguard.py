"""No network but loopback: a guard on this process's sockets (the suite's autouse fixture
`_no_network` in `tests/conftest.py` turns it on for every test).

`install()` wraps `socket.socket.connect`/`connect_ex` and `socket.getaddrinfo` once per
process. A connection to an address outside loopback (127.0.0.0/8, ::1) or a unix socket, and a
name lookup of a host other than `localhost` or a loopback literal, raise `NetworkBlocked` (an
`OSError`, so client code fails as it would offline) and are recorded; `blocked()` hands the
records of the current test to the fixture, which fails the test with them (a library that
swallows the error still fails the test). Child processes are not covered: they are the test's
own `tether` processes talking to the loopback servers the test started.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any, cast

_lock = threading.Lock()
_attempts: list[str] = []
_installed = False


class NetworkBlocked(OSError):
    """A test tried to reach a host outside loopback."""


def _loopback_host(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    if host in ("localhost", "localhost.", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _refuse(what: str) -> NetworkBlocked:
    with _lock:
        _attempts.append(what)
    return NetworkBlocked(f"tests use no network but loopback: {what}")


def _check_address(sock: socket.socket, address: Any) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        host: Any = cast("tuple[Any, ...]", address)[0] if isinstance(address, tuple) else address
        if not _loopback_host(host):
            raise _refuse(f"connect to {address!r}")


def install() -> None:
    """Wrap the socket entry points (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback_host(host):
            raise _refuse(f"name lookup of {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo


def blocked() -> list[str]:
    """The attempts refused since the last call (and forget them)."""
    with _lock:
        out = list(_attempts)
        _attempts.clear()
    return out
