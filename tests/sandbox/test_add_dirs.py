"""Extra folders (`--add-dir`, `tools.add_dirs`) under both sandboxes: the file tools and
`bash` may write in a writable one, only read a `:ro` one, and still nothing outside; the
extra folder's `.git` stays read-only like the root's."""

from __future__ import annotations

from pathlib import Path

from kit.sandbox import bash, call, context
from tether.sandbox.policy import DEFAULT_POLICY, PathPolicy
from tether.tools import ToolContext


def extra_ctx(root: Path, kind: str, extra: Path, ro: Path) -> ToolContext:
    policy = PathPolicy(
        deny_read=DEFAULT_POLICY.deny_read,
        allow_read=DEFAULT_POLICY.allow_read,
        add_dirs=(str(extra.resolve()),),
        add_dirs_ro=(str(ro.resolve()),),
    )
    return context(root, kind, policy=policy)


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    extra, ro, outside = tmp_path / "extra", tmp_path / "ref", tmp_path / "outside"
    for d in (extra, ro, outside):
        d.mkdir()
    (ro / "spec.md").write_text("the spec\n")
    (extra / ".git").mkdir()
    (extra / ".env").write_text("KEY=secret\n")
    return extra, ro, outside


async def test_file_tools_in_extra_folders(root: Path, kind: str, tmp_path: Path) -> None:
    extra, ro, outside = folders(tmp_path)
    ctx = extra_ctx(root, kind, extra, ro)
    r = await call(ctx, "write", path=str(extra / "a.txt"), content="one")
    assert not r.is_error, r.text
    r = await call(ctx, "edit", path=str(extra / "a.txt"), old_string="one", new_string="two")
    assert not r.is_error, r.text
    assert (extra / "a.txt").read_text() == "two"
    r = await call(ctx, "read", path=str(ro / "spec.md"))
    assert not r.is_error and "the spec" in r.text, r.text
    r = await call(ctx, "grep", pattern="spec", path=str(ro))
    assert str(ro.resolve() / "spec.md") in r.text, r.text
    r = await call(ctx, "glob", pattern="*.txt", path=str(extra))
    assert r.text == str(extra.resolve() / "a.txt"), r.text
    r = await call(ctx, "write", path=str(ro / "spec.md"), content="changed")
    assert r.is_error and "read-only" in r.text, r.text
    assert (ro / "spec.md").read_text() == "the spec\n"
    r = await call(ctx, "write", path=str(outside / "x.txt"), content="no")
    assert r.is_error and "outside the working folder" in r.text, r.text
    r = await call(ctx, "write", path=str(extra / ".git" / "config"), content="no")
    assert r.is_error and "read-only" in r.text, r.text
    r = await call(ctx, "read", path=str(extra / ".env"))
    assert r.is_error and "denied" in r.text, r.text
    assert not (outside / "x.txt").exists() and not (extra / ".git" / "config").exists()


async def test_bash_in_extra_folders(root: Path, kind: str, tmp_path: Path) -> None:
    extra, ro, outside = folders(tmp_path)
    ctx = extra_ctx(root, kind, extra, ro)
    r = await bash(ctx, f"echo ok > {extra}/b.txt && cat {ro}/spec.md && echo wrote")
    assert r.text == "the spec\nwrote", r.text
    r = await bash(ctx, f"cat {extra}/.env; echo end")
    assert "secret" not in r.text, r.text  # masked, as the root's dotenv files are
    assert (extra / "b.txt").read_text() == "ok\n"
    for target in (ro / "c.txt", outside / "c.txt", extra / ".git" / "c"):
        r = await bash(ctx, f"echo no > {target}")
        assert "(exit code" in r.text and "exit code 0" not in r.text, (target, r.text)
        assert not target.exists(), target


async def test_without_the_extra_folder_bash_cannot_write_there(
    root: Path, kind: str, tmp_path: Path
) -> None:
    extra, _, _ = folders(tmp_path)
    r = await bash(context(root, kind), f"echo no > {extra}/d.txt")
    assert "(exit code" in r.text and not (extra / "d.txt").exists(), r.text
