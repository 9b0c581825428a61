"""Unix sockets outside the sandbox are out of reach of commands (a docker.sock is a whole-host
escape), under bwrap and Landlock, against a real listening socket: connecting is refused
(`EACCES`, a line on stderr names the socket), however the path is reached (a symlink in the
working folder, a relative path, a datagram `sendto`); the command's own sockets (in the
working folder, in its /tmp) still work, and `tools.allow_unix_sockets` lets one in. Landlock
entered in the forked child has no supervisor: it refuses every unix socket but `socketpair`.
A control test shows the connect succeeds without a sandbox, so the assertions can fail."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.sandbox import bash, context
from tether.sandbox.policy import DEFAULT_POLICY, PathPolicy

KINDS = ("bwrap", "landlock", "landlock-child")

CLIENT = """
import socket, sys
try:
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    print("GOT", c.recv(16).decode())
except OSError as e:
    print("REFUSED", e.errno)
"""

OWN = """
import os, socket
srv = socket.socket(socket.AF_UNIX)
srv.bind("own.sock"); srv.listen()
c = socket.socket(socket.AF_UNIX); c.connect("own.sock")
a, _ = srv.accept(); a.sendall(b"mine"); print("OWN", c.recv(8).decode())
os.unlink("own.sock")
t = socket.socket(socket.AF_UNIX); t.bind("/tmp/t.sock"); t.listen()
c2 = socket.socket(socket.AF_UNIX); c2.connect("/tmp/t.sock"); print("TMP ok")
"""


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Server:
    """A unix socket listening outside the sandbox (under /var/tmp, which every sandbox shows
    read-only: /tmp would be hidden by the private /tmp anyway); counts connections."""

    def __init__(self) -> None:
        self.folder = Path(f"/var/tmp/tether-sock-{secrets.token_hex(4)}")
        self.folder.mkdir()
        self.path = self.folder / "service.sock"
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(self.path))
        self.sock.listen()
        self.dgram_path = self.folder / "dgram.sock"
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dgram.bind(str(self.dgram_path))
        self.dgram.settimeout(0.2)
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.sendall(b"REACHED")
            conn.close()

    def datagrams(self) -> int:
        n = 0
        while True:
            try:
                self.dgram.recv(64)
            except OSError:
                return n
            n += 1

    def close(self) -> None:
        self.sock.close()
        self.dgram.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


async def test_control_without_a_sandbox_the_socket_is_reached(root: Path, server: Server) -> None:
    (root / "client.py").write_text(CLIENT)
    r = await bash(context(root, "none"), f"python3 client.py {server.path}")
    assert "GOT REACHED" in r.text and server.accepted == 1


async def test_a_socket_outside_is_refused_however_it_is_named(
    root: Path, kind: str, server: Server
) -> None:
    (root / "client.py").write_text(CLIENT)
    os.symlink(server.path, root / "link.sock")
    rel = os.path.relpath(server.path, root)
    ctx = context(root, kind)
    for target in (str(server.path), "link.sock", rel):
        r = await bash(ctx, f"python3 client.py {target}")
        assert "REFUSED 13" in r.text, (target, r.text)
    assert server.accepted == 0
    if kind != "landlock-child":  # the supervisor names what it refused
        assert str(server.path) in r.text and "tools.allow_unix_sockets" in r.text


async def test_a_datagram_cannot_be_sent_outside(root: Path, kind: str, server: Server) -> None:
    code = (
        "import socket\n"
        "for make in (lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM),\n"
        "             lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]):\n"
        "    try:\n"
        f"        make().sendto(b'x', {str(server.dgram_path)!r}); print('SENT')\n"
        "    except OSError as e:\n"
        "        print('REFUSED', e.errno)\n"
    )
    (root / "dgram.py").write_text(code)
    r = await bash(context(root, kind), "python3 dgram.py")
    assert r.text.count("REFUSED 13") == 2, r.text
    assert server.datagrams() == 0


async def test_the_commands_own_sockets_still_work(root: Path, kind: str) -> None:
    (root / "own.py").write_text(OWN)
    pair = "python3 -c 'import socket; print(len(socket.socketpair()))'"
    r = await bash(context(root, kind), f"python3 own.py; {pair}")
    assert "\n2" in r.text or r.text.endswith("2"), r.text  # socketpair works everywhere
    if kind == "landlock-child":  # no supervisor: no unix socket but socketpair
        assert "OWN" not in r.text
    else:
        assert "OWN mine" in r.text and "TMP ok" in r.text, r.text


async def test_the_user_can_let_one_socket_in(root: Path, kind: str, server: Server) -> None:
    (root / "client.py").write_text(CLIENT)
    policy = PathPolicy(deny_read=DEFAULT_POLICY.deny_read, unix_sockets=(str(server.path),))
    r = await bash(context(root, kind, policy=policy), f"python3 client.py {server.path}")
    if kind == "landlock-child":
        assert "REFUSED 13" in r.text and server.accepted == 0
    else:
        assert "GOT REACHED" in r.text and server.accepted == 1, r.text


async def test_a_connect_from_another_thread_is_answered(root: Path, kind: str) -> None:
    """The supervisor is told the calling thread: it must find its process (pidfd_open
    takes a process, not a thread)."""
    code = (
        "import socket, threading\n"
        "srv = socket.socket(socket.AF_UNIX); srv.bind('t.sock'); srv.listen()\n"
        "def go():\n"
        "    c = socket.socket(socket.AF_UNIX); c.connect('t.sock'); print('THREAD ok')\n"
        "t = threading.Thread(target=go); t.start(); t.join()\n"
    )
    (root / "threaded.py").write_text(code)
    r = await bash(context(root, kind), "python3 threaded.py")
    if kind == "landlock-child":
        assert "THREAD ok" not in r.text
    else:
        assert "THREAD ok" in r.text, r.text
