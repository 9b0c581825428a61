"""The path guard: containment by real path (T32), the escape suite over every file tool, and a
Hypothesis property: resolve_inside never returns a path outside the root."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.messages import ToolResultBlock
from tether.tools import PathOutsideError, PathPolicy, ToolContext, resolve_inside, scrubbed_env

Call = Callable[..., Awaitable[ToolResultBlock]]


def snapshot(top: Path, skip: Path) -> dict[str, tuple[str, str]]:
    """Every entry under `top` (except `skip`'s subtree): type plus content / link target."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        dirnames[:] = [n for n in dirnames if d / n != skip]
        for n in dirnames + filenames:
            p = d / n
            key = str(p.relative_to(top))
            if p.is_symlink():
                out[key] = ("link", os.readlink(p))
            elif p.is_dir():
                out[key] = ("dir", oct(p.stat().st_mode))
            else:
                out[key] = ("file", p.read_bytes().hex() + oct(p.stat().st_mode))
    return out


# --- resolve_inside ------------------------------------------------------------------------


def test_resolve_inside_basics(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", root / "out_link")
    os.symlink("a/b", root / "in_link")
    os.symlink(tmp_path / "out" / "nope", root / "dangling")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.symlink(root, tmp_path / "root_alias")

    assert resolve_inside(root, ".") == root
    assert resolve_inside(root, "") == root
    assert resolve_inside(root, "a/../a/b/new/x.txt") == root / "a/b/new/x.txt"
    assert resolve_inside(root, "in_link/c") == root / "a/b/c"
    assert resolve_inside(root, str(root / "a")) == root / "a"  # absolute inside: allowed
    assert resolve_inside(tmp_path / "root_alias", "a") == root / "a"  # the root is resolved
    assert resolve_inside(root, "nope/../a") == root / "a"

    cases = {
        "..": tmp_path,
        "../out/x": tmp_path / "out/x",
        "a/../../out": tmp_path / "out",
        str(tmp_path / "out"): tmp_path / "out",
        "/etc/passwd": Path("/etc/passwd"),
        "out_link/x": tmp_path / "out/x",
        "dangling": tmp_path / "out/nope",
        "in_link/../../../out": tmp_path / "out",  # `..` after a symlink walks the real parent
    }
    for user, resolved in cases.items():
        with pytest.raises(PathOutsideError) as err:
            resolve_inside(root, user)
        assert str(resolved) in str(err.value), user
        assert err.value.resolved == str(resolved)
    for bad in ("~", "~/x", "~root/x", "a\0b", "loop1/x"):
        with pytest.raises(PathOutsideError):
            resolve_inside(root, bad)
    assert not (tmp_path / "root" / "~").exists()


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp).resolve()
        root = top / "root"
        (root / "a" / "b").mkdir(parents=True)
        (root / "file.txt").write_text("x")
        (top / "outside" / "deep").mkdir(parents=True)
        links = {
            "link_out": top / "outside",
            "link_in": Path("a"),
            "link_up": Path(".."),
            "link_root": root,
            "dangling": top / "outside" / "nope",
            "a/b/link_back": Path("../.."),
            "a/link_abs_in": root / "a" / "b",
            "a/rel_out": Path("../../outside/deep"),
            "loop1": Path("loop2"),
            "loop2": Path("loop1"),
        }
        for name, target in links.items():
            os.symlink(target, root / name)
        yield root


_names = st.sampled_from(
    [
        ".",
        "..",
        "a",
        "b",
        "file.txt",
        "new",
        "link_out",
        "link_in",
        "link_up",
        "link_root",
        "dangling",
        "link_back",
        "link_abs_in",
        "rel_out",
        "loop1",
        "deep",
    ]
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_names, min_size=1, max_size=7), absolute=st.booleans())
def test_resolve_inside_never_escapes(tree: Path, parts: list[str], absolute: bool) -> None:
    user = "/".join(parts)
    if absolute:
        user = str(tree / user)
    joined = os.path.join(tree, user)
    oracle = os.path.realpath(joined)
    try:
        got = resolve_inside(tree, user)
    except PathOutsideError:
        if "loop1" not in parts:
            assert not (oracle == str(tree) or oracle.startswith(f"{tree}/")), (user, oracle)
        return
    s = str(got)
    assert s == str(tree) or s.startswith(f"{tree}/")
    assert os.path.realpath(s) == s  # nothing left to resolve
    if "loop1" not in parts:
        assert oracle == s


# --- T32 -----------------------------------------------------------------------------------


async def test_t32_symlink_escape_by_write(tmp_path: Path) -> None:
    tmp = tmp_path.resolve()
    for cmd in (
        "mkdir -p $TMP/r/workspace $TMP/r/OUTSIDE",
        "ln -s $TMP/r/OUTSIDE $TMP/r/workspace/outbox",
        "ln -s $TMP/r/OUTSIDE/victim.txt $TMP/r/workspace/notes.md",
    ):
        subprocess.run(
            ["bash", "-c", cmd], check=True, env={"TMP": str(tmp), "PATH": os.environ["PATH"]}
        )
    from tether.messages import ToolCallBlock
    from tether.tools import ToolRegistry, builtin_tools, run_tool_call

    ctx = ToolContext.create(tmp / "r" / "workspace", env=scrubbed_env())
    before = snapshot(tmp, skip=tmp / "r" / "workspace")
    reg = ToolRegistry(builtin_tools())
    calls = [
        ToolCallBlock(
            id="w1", name="write", arguments={"path": "outbox/escaped.txt", "content": "ESCAPED"}
        ),
        ToolCallBlock(id="w2", name="write", arguments={"path": "notes.md", "content": "OWNED"}),
    ]
    r1, r2 = [await run_tool_call(reg, c, ctx) for c in calls]
    assert r1.is_error and str(tmp / "r/OUTSIDE/escaped.txt") in r1.text
    assert r2.is_error and str(tmp / "r/OUTSIDE/victim.txt") in r2.text
    assert snapshot(tmp, skip=tmp / "r" / "workspace") == before
    assert os.listdir(tmp / "r" / "OUTSIDE") == []
    assert os.readlink(tmp / "r/workspace/notes.md") == str(tmp / "r/OUTSIDE/victim.txt")


# --- the escape suite, for every file tool --------------------------------------------------


@pytest.fixture
def escape_ws(root: Path) -> Path:
    """`root` plus an OUTSIDE sibling with a secret, and symlinks pointing at it."""
    outside = root.parent / "OUTSIDE"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (root / "inner.txt").write_text("hello SECRET-free\n")
    os.symlink(outside, root / "outbox")
    os.symlink(outside / "victim.txt", root / "notes.md")  # dangling
    os.symlink(outside / "secret.txt", root / "leak.txt")  # final component, existing
    os.symlink("inner.txt", root / "ok_link")  # inside: allowed
    (root / "sub").mkdir()
    os.symlink(outside / "sub", root / "sub" / "parent_link")  # symlinked parent dir
    return outside


def _escapes(outside: Path) -> list[str]:
    return [
        "../OUTSIDE/secret.txt",
        "sub/../../OUTSIDE/secret.txt",
        str(outside / "secret.txt"),
        "leak.txt",
        "notes.md",
        "outbox/secret.txt",
        "outbox/new.txt",
        "sub/parent_link/new.txt",
        "~/secret.txt",
    ]


async def test_escape_suite_file_tools(call: Call, root: Path, escape_ws: Path) -> None:
    outside = escape_ws
    before = snapshot(root.parent, skip=root)
    for user in _escapes(outside):
        attempts = {
            "read": {"path": user},
            "write": {"path": user, "content": "PWNED"},
            "edit": {"path": user, "old_string": "TOP", "new_string": "PWNED"},
            "grep": {"pattern": "SECRET", "path": user},
            "ls": {"path": user},
            "glob": {"pattern": "*", "path": user},
        }
        for name, args in attempts.items():
            r = await call(name, **args)
            assert r.is_error, (name, user, r.text)
            assert "SECRET" not in r.text.replace("SECRET-free", "")
            if not user.startswith("~"):
                assert str(outside) in r.text, (name, user, r.text)  # names the resolved path
    for name, args in [
        ("ls", {"path": "outbox"}),
        ("ls", {"path": ".."}),
        ("glob", {"pattern": "*", "path": "outbox"}),
        ("glob", {"pattern": "../*"}),
        ("glob", {"pattern": str(outside / "*")}),
    ]:
        assert (await call(name, **args)).is_error
    assert snapshot(root.parent, skip=root) == before


async def test_search_tools_never_list_outside(call: Call, root: Path, escape_ws: Path) -> None:
    r = await call("glob", pattern="**/*")
    assert not r.is_error
    assert "secret.txt" not in r.text and "leak.txt" not in r.text and "notes.md" not in r.text
    assert "inner.txt" in r.text and "ok_link" in r.text and "outbox" not in r.text
    r = await call("glob", pattern="outbox/*")
    assert "secret" not in r.text
    r = await call("grep", pattern="SECRET")
    assert r.text.splitlines() == ["inner.txt:1: hello SECRET-free", "ok_link:1: hello SECRET-free"]
    r = await call("ls", path=".")
    assert r.text.splitlines() == [
        "inner.txt",
        "leak.txt@",
        "notes.md@",
        "ok_link@",
        "outbox@",
        "sub/",
    ]


async def test_inside_symlink_is_followed_to_its_target(
    call: Call, root: Path, escape_ws: Path
) -> None:
    r = await call("write", path="ok_link", content="new\n")
    assert not r.is_error and "inner.txt" in r.text
    assert (root / "inner.txt").read_text() == "new\n" and (root / "ok_link").is_symlink()


async def test_deny_policy(root: Path, registry: object) -> None:
    from tether.messages import ToolCallBlock
    from tether.tools import ToolRegistry, builtin_tools, run_tool_call

    (root / ".env").write_text("DB_PASSWORD=hunter2-very-secret\n")
    (root / "appsettings.json").write_text('{"ConnectionStrings": {"Main": "s3cr3t-conn"}}')
    (root / "conf").mkdir()
    (root / "conf" / ".env").write_text("X_PASSWORD=nested-secret\n")
    os.symlink(".env", root / "alias.txt")
    policy = PathPolicy(deny_read=("**/.env", "*appsettings*"), deny_write=("**/.env",))
    ctx = ToolContext.create(root, env={}, policy=policy)
    reg = ToolRegistry(builtin_tools())

    async def run(name: str, **args: object) -> str:
        r = await run_tool_call(reg, ToolCallBlock(id="x", name=name, arguments=dict(args)), ctx)
        assert r.is_error or name in ("grep", "ls")
        return r.text

    for p in (".env", "conf/.env", "appsettings.json", "alias.txt", str(root / ".env")):
        assert "denied by the policy" in await run("read", path=p)
    assert "denied" in await run("write", path="conf/.env", content="x")
    text = await run("grep", pattern="secret|conn")
    assert "hunter2" not in text and "s3cr3t" not in text and "nested" not in text
    assert "skipped by the deny policy" in text


def test_open_inside_closes_the_swap_race(tmp_path: Path) -> None:
    from tether.sandbox.paths import atomic_write, open_inside

    root = (tmp_path / "root").resolve()
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "out"
    outside.mkdir()
    (outside / "f.txt").write_text("outside")
    checked_file = resolve_inside(root, "f.txt")
    checked_in_sub = resolve_inside(root, "sub/f.txt")
    # after the check, the final component becomes a symlink to outside
    os.symlink(outside / "f.txt", root / "f.txt")
    with pytest.raises(PathOutsideError):
        open_inside(root, checked_file, os.O_RDONLY)
    # ... or a parent folder is swapped for a symlink to outside
    (root / "sub").rmdir()
    os.symlink(outside, root / "sub")
    with pytest.raises(PathOutsideError):
        open_inside(root, checked_in_sub, os.O_RDONLY)
    with pytest.raises(PathOutsideError):
        atomic_write(root, checked_in_sub, b"PWNED")
    assert (outside / "f.txt").read_text() == "outside" and os.listdir(outside) == ["f.txt"]


def test_context_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        ToolContext.create(tmp_path / "missing")
    ctx = ToolContext.create(tmp_path, env={"A": "1"})
    assert ctx.root == tmp_path.resolve() and ctx.env == {"A": "1"} and ctx.session_dir is None
