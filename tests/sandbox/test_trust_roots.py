"""Kind 1 of issue 11: `.git/`, `.tether/` and the tool folders are read-only to every tool
(file tools, `bash`, a folder tool's worker) under both sandboxes, unless the user opts in."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.sandbox import bash, call, context, tool_folder, worker_sh
from tether.sandbox.policy import DEFAULT_POLICY, PathPolicy

PLANTS = (
    ".tether/tools/x.py",
    ".tether/settings.json",
    ".git/config",
    ".git/hooks/pre-commit",
)


def state(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted((root / ".git").rglob("*")) + sorted((root / ".tether").rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("target", PLANTS)
async def test_file_tools_cannot_write_trust_roots(root: Path, kind: str, target: str) -> None:
    ctx = context(root, kind)
    before = state(root)
    r = await call(ctx, "write", path=target, content="evil = 1\n")
    assert r.is_error and "read-only" in r.text, r.text
    if (root / target).exists():
        r = await call(
            ctx, "edit", path=target, old_string=(root / target).read_text()[:3], new_string="EVIL"
        )
        assert r.is_error and "read-only" in r.text, r.text
    assert state(root) == before


async def test_file_tools_cannot_reach_them_through_a_symlink_or_dotdot(
    root: Path, kind: str
) -> None:
    (root / "g").symlink_to(root / ".git")
    ctx = context(root, kind)
    for target in ("g/config", "sub/../.git/config", str(root / ".tether" / "x.py")):
        r = await call(ctx, "write", path=target, content="x")
        assert r.is_error and "read-only" in r.text, (target, r.text)
    assert not (root / ".tether" / "x.py").exists()


async def test_file_tools_refuse_even_without_a_policy(root: Path, kind: str) -> None:
    r = await call(context(root, kind, policy=None), "write", path=".git/config", content="x")
    assert r.is_error and "read-only" in r.text


async def test_bash_cannot_write_trust_roots(root: Path, kind: str) -> None:
    before = state(root)
    ctx = context(root, kind)
    for target in PLANTS:
        r = await bash(ctx, f"mkdir -p $(dirname {target}); echo evil > {target}")
        assert "exit code 0" not in r.text and "(exit code" in r.text, (target, r.text)
    r = await bash(ctx, "ln -sf /bin/true .git/hooks/post-checkout || rm -rf .tether")
    assert "exit code 0" not in r.text, r.text
    assert state(root) == before


async def test_a_worker_cannot_write_trust_roots(root: Path, kind: str, tmp_path: Path) -> None:
    folder = tool_folder(tmp_path / "tools")
    before = state(root)
    ctx = context(root, kind)
    for target in PLANTS:
        r = await worker_sh(ctx, folder, f"echo evil > {target}")
        assert "exit code 0" not in r.text, (target, r.text)
    assert state(root) == before


async def test_configured_tool_folders_are_read_only_too(root: Path, kind: str) -> None:
    folder = root / "mytools"
    folder.mkdir()
    (folder / "t.py").write_text("# a tool module\n")
    policy = PathPolicy(deny_read=DEFAULT_POLICY.deny_read, protected=(str(folder),))
    ctx = context(root, kind, policy=policy)
    r = await call(ctx, "write", path="mytools/t.py", content="evil")
    assert r.is_error and "read-only" in r.text
    r = await bash(ctx, "echo evil > mytools/t.py")
    assert "exit code 0" not in r.text, r.text
    assert (folder / "t.py").read_text() == "# a tool module\n"


async def test_the_user_can_opt_in(root: Path, kind: str) -> None:
    policy = PathPolicy(allow_protected_writes=True)
    ctx = context(root, kind, policy=policy)
    r = await call(ctx, "write", path=".tether/notes.md", content="ok")
    assert not r.is_error, r.text
    r = await bash(ctx, "echo ok >> .git/config && echo done")
    assert r.text == "done", r.text
