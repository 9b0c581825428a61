"""Trust roots and secrets, whole kinds, under bwrap and Landlock (launcher and in-child):
- every `.git` at any depth (a nested repository, a `.git` file's gitdir) is read-only to
  commands and to the file tools;
- a `.git`, `.tether` or tool folder a command creates does not survive the command (moved
  aside to `<name>.refused-by-tether`, the result says so);
- every dotenv variant the file tools refuse reads as an empty, read-only file to commands
  (`cat`, `base64`, `rev` alike), and a denied folder as an empty one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kit.sandbox import bash, call, context, tool_folder, worker_sh
from tether.sandbox.policy import DEFAULT_POLICY, PathPolicy

KINDS = ("bwrap", "landlock", "landlock-child")
SECRET = "API_KEY=sk-live-0123456789abcdef\n"
DOTENVS = (".env", ".env.local", "sub/.env.production", "config/app.env", "deep/a/b/.env")


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _nested(root: Path) -> dict[str, str]:
    """Nested repositories: `sub/.git`, `a/b/c/.git`, and a worktree-style `.git` file."""
    files = {
        "sub/.git/config": "[core]\n",
        "sub/.git/hooks/pre-commit": "#!/bin/sh\nexit 0\n",
        "a/b/c/.git/HEAD": "ref: refs/heads/main\n",
        "gitdirs/wt/HEAD": "ref: refs/heads/wt\n",
        "wt/.git": "gitdir: ../gitdirs/wt\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return files


def _state(root: Path, files: dict[str, str]) -> dict[str, str]:
    return {rel: (root / rel).read_text() for rel in files}


async def test_nested_git_folders_are_read_only_to_commands(root: Path, kind: str) -> None:
    files = _nested(root)
    ctx = context(root, kind)
    for target in (
        "sub/.git/hooks/post-checkout",
        "sub/.git/config",
        "a/b/c/.git/hooks/pre-commit",
        "gitdirs/wt/hooks/pre-commit",
        "wt/.git",
    ):
        r = await bash(ctx, f"mkdir -p $(dirname {target}) 2>/dev/null; echo evil > {target}")
        assert "(exit code" in r.text and "exit code 0" not in r.text, (target, r.text)
    r = await bash(ctx, "rm -rf sub/.git a/b/c/.git || mv sub/.git sub/git-old")
    assert "exit code 0" not in r.text
    assert _state(root, files) == files
    assert not (root / "sub" / ".git" / "hooks" / "post-checkout").exists()


async def test_nested_git_folders_are_read_only_to_the_file_tools(root: Path, kind: str) -> None:
    files = _nested(root)
    ctx = context(root, kind)
    for target in ("sub/.git/hooks/pre-commit", "a/b/c/.git/config", "new/.git/hooks/x"):
        r = await call(ctx, "write", path=target, content="evil\n")
        assert r.is_error and "read-only" in r.text, (target, r.text)
    assert _state(root, files) == files and not (root / "new").exists()


async def test_a_trust_root_a_command_creates_does_not_survive_it(root: Path, kind: str) -> None:
    shutil.rmtree(root / ".tether")
    ctx = context(root, kind)
    r = await bash(
        ctx,
        "mkdir -p fresh/.git/hooks && printf '#!/bin/sh\\necho pwned\\n' > fresh/.git/hooks/post-checkout"
        " && printf 'gitdir: ../elsewhere\\n' > other.git.d && mkdir -p deep/x && cp other.git.d deep/x/.git"
        " && mkdir -p .tether/tools && echo 'import os' > .tether/tools/t.py && echo made",
    )
    assert r.text.startswith("made"), r.text
    assert "refused-by-tether" in r.text and "fresh/.git" in r.text, r.text
    for rel in ("fresh/.git", "deep/x/.git", ".tether"):
        assert not (root / rel).exists(), rel
        assert (root / f"{rel}.refused-by-tether").exists(), rel  # moved aside, not lost
    # a later command may create the same again: it is moved aside again, under a new name
    r = await bash(ctx, "mkdir -p fresh/.git && echo again")
    assert not (root / "fresh" / ".git").exists()
    assert (root / "fresh" / ".git.refused-by-tether-2").is_dir()


async def test_the_existing_trust_roots_are_left_alone(root: Path, kind: str) -> None:
    _nested(root)
    r = await bash(context(root, kind), "echo ok > notes.txt && cat sub/.git/config")
    assert r.text.startswith("[core]") and "refused" not in r.text, r.text
    assert (root / "sub" / ".git").is_dir() and (root / ".tether").is_dir()


def _secrets(root: Path) -> None:
    for rel in DOTENVS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(SECRET)
    (root / ".env.example").write_text("API_KEY=\n")
    (root / "vault").mkdir()
    (root / "vault" / "key.pem").write_text("-----BEGIN KEY-----\n")


async def test_every_dotenv_variant_reads_empty_to_commands(root: Path, kind: str) -> None:
    _secrets(root)
    ctx = context(root, kind)
    for rel in DOTENVS:
        for reader in ("cat", "base64", "rev"):
            r = await bash(ctx, f"{reader} {rel}; echo END")
            assert "sk-live" not in r.text and "c2stbGl2" not in r.text, (rel, reader, r.text)
            assert "evil-0123" not in r.text and r.text.endswith("END"), (rel, reader, r.text)
        r = await call(ctx, "read", path=rel)
        assert r.is_error  # the file tools refuse the same files
    r = await bash(ctx, "grep -r sk-live . ; cat .env.example")
    assert "sk-live" not in r.text and "API_KEY=" in r.text, r.text
    r = await bash(ctx, "echo LEAK=1 >> .env; cp .env.example .env")
    assert "exit code 0" not in r.text
    assert all((root / rel).read_text() == SECRET for rel in DOTENVS)  # untouched


async def test_what_a_denied_folder_holds_reads_empty_to_commands(root: Path, kind: str) -> None:
    _secrets(root)
    policy = PathPolicy(
        deny_read=(*DEFAULT_POLICY.deny_read, "vault/"), allow_read=DEFAULT_POLICY.allow_read
    )
    r = await bash(context(root, kind, policy=policy), "cat vault/key.pem; echo END")
    assert "BEGIN KEY" not in r.text and r.text.endswith("END"), r.text


async def test_a_denied_folder_is_empty_to_commands(root: Path, kind: str) -> None:
    _secrets(root)
    policy = PathPolicy(
        deny_read=(*DEFAULT_POLICY.deny_read, "vault"), allow_read=DEFAULT_POLICY.allow_read
    )
    r = await bash(context(root, kind, policy=policy), "ls -A vault; echo END")
    assert r.text == "END", r.text


async def test_a_folder_tools_worker_cannot_leave_a_git_behind(
    root: Path, kind: str, tmp_path: Path
) -> None:
    folder = tool_folder(tmp_path / "tools")
    r = await worker_sh(context(root, kind), folder, "mkdir -p made/.git/hooks && echo made")
    assert not (root / "made" / ".git").exists(), r.text
    assert (root / "made" / ".git.refused-by-tether").is_dir() and "refused-by-tether" in r.text
