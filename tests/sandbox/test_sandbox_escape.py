"""The escape suite under each OS sandbox (bwrap, Landlock): every attempt is refused and nothing
is written outside the working folder; `.git` stays read-only; refused variables are not in the
environment; the network is off unless allowed (cases T31, T32, extended to the `bash` tool).

A kind that does not work on this machine is skipped with the reason; one control test shows the
same write escapes without a sandbox, so the assertions here can fail."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.sandbox import sandbox_for
from tether.messages import ToolCallBlock, ToolResultBlock
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env
from tether.tools.env import DEFAULT_REFUSED

KINDS = ("bwrap", "landlock-child", "landlock")


def snapshot(top: Path) -> dict[str, str]:
    """Every path under `top` (not following links) with its content or link target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if p.is_symlink():
                out[str(p)] = "-> " + os.readlink(p)
            elif p.is_file():
                out[str(p)] = p.read_text(errors="replace")
            else:
                out[str(p)] = "<dir>"
    return out


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A plain working folder (not the suite's project with `.git`: `world` builds its own)."""
    r = tmp_path / "ws"
    r.mkdir()
    return r.resolve()


@pytest.fixture
def world(root: Path) -> Iterator[dict[str, Path]]:
    """`root` with a .git, inner files and symlinks to an OUTSIDE sibling; a fake HOME outside."""
    outside = root.parent / "OUTSIDE"
    home = root.parent / "HOME"
    (outside / "sub").mkdir(parents=True)
    home.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (root / "inner.txt").write_text("inner\n")
    os.symlink(outside, root / "outbox")
    os.symlink(outside / "victim.txt", root / "notes.md")  # dangling
    os.symlink(outside / "secret.txt", root / "leak.txt")  # final component, existing
    git = root / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n")
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    yield {"root": root, "outside": outside, "home": home, "git": git}


def context(root: Path, kind: str, *, network: bool = False, **env: str) -> ToolContext:
    base = {**scrubbed_env(), **env}
    return ToolContext.create(root, env=base, sandbox=sandbox_for(kind), network=network)


async def bash(ctx: ToolContext, command: str) -> ToolResultBlock:
    block = ToolCallBlock(id="b", name="bash", arguments={"command": command, "timeout_s": 30})
    return await run_tool_call(ToolRegistry(builtin_tools()), block, ctx)


def escape_commands(outside: Path) -> list[str]:
    return [
        "echo x > ../OUTSIDE/dotdot.txt",
        f"echo x > {outside}/absolute.txt",
        f"echo x > /tmp/../{str(outside).lstrip('/')}/tmp_dotdot.txt",
        "echo x > notes.md",  # dangling symlink: would create OUTSIDE/victim.txt
        "echo x >> leak.txt",  # symlink as the final component, to an existing file
        "echo x > outbox/through_dir_link.txt",
        "mkdir outbox/newdir",
        "rm ../OUTSIDE/secret.txt",
        "mv inner.txt ../OUTSIDE/moved.txt",
        "cp inner.txt outbox/sub/copied.txt",
        "touch $HOME/x",
        f"{sys.executable} -I -c \"open('{outside}/py.txt', 'w').write('x')\"",
    ]


async def test_bash_writes_outside_are_refused(world: dict[str, Path], kind: str) -> None:
    outside, home, root = world["outside"], world["home"], world["root"]
    ctx = context(root, kind, HOME=str(home))
    before = snapshot(outside)
    for command in escape_commands(outside):
        r = await bash(ctx, command)
        assert "exit code 0" not in r.text and "(exit code" in r.text, (command, r.text)
        assert snapshot(outside) == before, command
        assert list(home.iterdir()) == [], command
    assert (root / "inner.txt").read_text() == "inner\n"


async def test_control_the_same_write_escapes_without_a_sandbox(world: dict[str, Path]) -> None:
    ctx = ToolContext.create(world["root"], env=scrubbed_env())
    r = await bash(ctx, "echo x > ../OUTSIDE/dotdot.txt")
    assert not r.is_error and (world["outside"] / "dotdot.txt").exists()


async def test_bash_still_writes_inside_and_in_tmp(world: dict[str, Path], kind: str) -> None:
    ctx = context(world["root"], kind)
    r = await bash(
        ctx, "mkdir -p a/b && echo y > a/b/f && mv a/b/f g && t=$(mktemp) && echo z > $t && cat $t"
    )
    assert r.text == "z", r.text
    assert (world["root"] / "g").read_text() == "y\n"
    # the private temp folder is /tmp (and $TMPDIR under Landlock) and persists across calls
    await bash(ctx, "echo 1 > /tmp/keep")
    r = await bash(ctx, 'cat /tmp/keep ${TMPDIR:+"$TMPDIR/keep"}')
    assert r.text in ("1", "1\n1"), r.text
    assert not Path("/tmp/keep").exists() or Path("/tmp/keep").read_text() != "1\n"


async def test_bash_cannot_write_into_git(world: dict[str, Path], kind: str) -> None:
    git = world["git"]
    ctx = context(world["root"], kind)
    before = snapshot(git)
    for command in (
        "echo evil >> .git/config",
        "echo '#!/bin/sh' > .git/hooks/pre-commit",
        "rm .git/HEAD",
        "mv .git .git_moved",
        "rm -rf .git",
        "git config --file .git/config core.hooksPath /tmp",
    ):
        r = await bash(ctx, command)
        assert "(exit code" in r.text, (command, r.text)
        assert snapshot(git) == before, command
    r = await bash(ctx, "cat .git/HEAD")  # still readable
    assert r.text == "ref: refs/heads/main"


async def test_file_tools_refuse_escapes_under_a_sandbox(world: dict[str, Path], kind: str) -> None:
    outside = world["outside"]
    ctx = context(world["root"], kind)
    reg = ToolRegistry(builtin_tools())
    before = snapshot(outside)
    for path in ("../OUTSIDE/a.txt", f"{outside}/b.txt", "notes.md", "leak.txt", "outbox/c.txt"):
        block = ToolCallBlock(id="w", name="write", arguments={"path": path, "content": "x"})
        r = await run_tool_call(reg, block, ctx)
        assert r.is_error, path
        assert snapshot(outside) == before, path


async def test_t32_symlinks_through_sandboxed_bash(tmp_path: Path, kind: str) -> None:
    tmp = tmp_path.resolve()
    for cmd in (
        "mkdir -p $TMP/r/workspace $TMP/r/OUTSIDE",
        "ln -s $TMP/r/OUTSIDE $TMP/r/workspace/outbox",
        "ln -s $TMP/r/OUTSIDE/victim.txt $TMP/r/workspace/notes.md",
    ):
        subprocess.run(
            ["bash", "-c", cmd], check=True, env={"TMP": str(tmp), "PATH": os.environ["PATH"]}
        )
    ctx = context(tmp / "r" / "workspace", kind)
    r1 = await bash(ctx, "echo ESCAPED > outbox/escaped.txt")
    r2 = await bash(ctx, "echo OWNED > notes.md")
    assert "(exit code 1)" in r1.text and "(exit code 1)" in r2.text
    assert os.listdir(tmp / "r" / "OUTSIDE") == []


async def test_refused_env_vars_are_not_visible(
    root: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-escape-test-0123456789abcdef")
    monkeypatch.setenv("MY_CORP_CRED", "corp-cred-value-123")
    ctx = ToolContext.create(
        root,
        env=scrubbed_env(refused=(*DEFAULT_REFUSED, "MY_CORP_CRED")),
        sandbox=sandbox_for(kind),
    )
    r = await bash(
        ctx, 'echo "[$OPENAI_API_KEY][$MY_CORP_CRED]"; env | grep -c -i -E "openai|corp"'
    )
    assert r.text.splitlines()[0] == "[][]", r.text


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback TCP listener (the kernel completes handshakes into its backlog)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    try:
        yield int(srv.getsockname()[1])
    finally:
        srv.close()


def connect_command(port: int) -> str:
    code = (
        f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); "
        "print('CONNECTED')"
    )
    return f'{sys.executable} -I -c "{code}"'


async def test_network_off_refuses_a_loopback_connect(root: Path, kind: str, listener: int) -> None:
    r = await bash(context(root, kind), connect_command(listener))
    assert "CONNECTED" not in r.text and "(exit code 1)" in r.text, r.text


async def test_network_allowed_connects(root: Path, kind: str, listener: int) -> None:
    r = await bash(context(root, kind, network=True), connect_command(listener))
    assert r.text == "CONNECTED", r.text


async def test_landlock_alone_when_namespaces_are_refused(
    world: dict[str, Path], listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel grants no namespace (no root, unprivileged user namespaces off), the
    Landlock domain alone still refuses writes outside and, on ABI ≥ 4, TCP connects; `.git`
    is then writable (documented)."""
    from tether.sandbox import landlock

    sb = sandbox_for("landlock-child")

    def refused(*_args: object) -> bool:
        return False

    monkeypatch.setattr(landlock, "_namespaces", refused)
    ctx = ToolContext.create(world["root"], env=scrubbed_env(), sandbox=sb)
    before = snapshot(world["outside"])
    for command in escape_commands(world["outside"])[:6]:
        r = await bash(ctx, command)
        assert "(exit code" in r.text and "exit code 0" not in r.text, (command, r.text)
    assert snapshot(world["outside"]) == before
    if landlock.abi_version() >= 4:
        r = await bash(ctx, connect_command(listener))
        assert "CONNECTED" not in r.text, r.text
    r = await bash(ctx, "echo planted >> .git/config")
    assert r.text == "(no output, exit code 0)"  # the documented gaps without namespaces:
    r = await bash(ctx, 'echo 1 > /tmp/tether-probe-x; echo 2 > "$TMPDIR/y" && cat "$TMPDIR/y"')
    assert "Permission denied" in r.text and r.text.splitlines()[1] == "2", r.text


async def test_a_git_file_worktree_pointer_is_read_only(root: Path, kind: str) -> None:
    """In a git worktree `.git` is a file naming the real git dir; re-pointing it at a folder
    with planted hooks must fail too."""
    (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    r = await bash(context(root, kind), "echo 'gitdir: /tmp/evil' > .git")
    assert "(exit code 1)" in r.text, r.text
    assert (root / ".git").read_text() == "gitdir: /elsewhere/.git/worktrees/x\n"


async def test_bwrap_hides_the_hosts_service_sockets_in_run(root: Path) -> None:
    """A service socket in /run (docker.sock, the D-Bus buses live there) would let a
    command act outside the sandbox; under bwrap /run is empty."""
    import threading

    from tether.sandbox.detect import available

    bwrap = available("bwrap")
    if bwrap is None or not os.access("/run", os.W_OK):
        pytest.skip("needs bwrap and a writable /run")
    path = f"/run/tether-test-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    accepted: list[bool] = []

    def serve() -> None:
        server.settimeout(5)
        try:
            conn, _ = server.accept()
            accepted.append(True)
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        probe = (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.connect({path!r}); print('connected')"
        )
        ctx = ToolContext.create(root, env=scrubbed_env(), sandbox=bwrap)
        block = ToolCallBlock(
            id="s", name="bash", arguments={"command": f'{sys.executable} -c "{probe}"'}
        )
        result = await run_tool_call(ToolRegistry(builtin_tools()), block, ctx)
        assert "connected" not in result.text and accepted == []
        unconfined = ToolContext.create(root, env=scrubbed_env(), sandbox=None)
        result = await run_tool_call(ToolRegistry(builtin_tools()), block, unconfined)
        assert "connected" in result.text  # the control: without the sandbox it connects
    finally:
        server.close()
        os.unlink(path)
