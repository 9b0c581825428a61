"""Kinds 2 and 5 of issue 11: tether's own config, data and credential files, and other
sessions' private temp folders, are unreadable from `bash` and from a folder tool's worker under
both sandboxes; secret-by-convention variables do not reach tools (unless allowed back); every
dotenv variant is denied to the file tools, and a hard link cannot defeat that."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from kit.sandbox import bash, call, context, sandbox_for, tool_folder, worker_sh
from tether.sandbox.base import Sandbox
from tether.sandbox.bwrap import BwrapSandbox
from tether.sandbox.landlock_sandbox import LandlockSandbox
from tether.tools import scrubbed_env

SECRET = "plain-looking-secret-0042"


@pytest.fixture
def tether_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """tether's config folder (with a credential file) and data folder (a session)."""
    config = tmp_path / "_tether_user_config"  # TETHER_CONFIG_DIR (tests/conftest.py)
    config.mkdir(exist_ok=True)
    (config / "credentials.json").write_text(f'{{"work": "{SECRET}"}}')
    home = tmp_path / "tether_home"
    (home / "sessions").mkdir(parents=True)
    (home / "sessions" / "s1.jsonl").write_text(f'{{"note": "{SECRET}"}}\n')
    monkeypatch.setenv("TETHER_HOME", str(home))
    return {"credentials": config / "credentials.json", "session": home / "sessions" / "s1.jsonl"}


@pytest.mark.parametrize("what", ["credentials", "session"])
async def test_bash_cannot_read_tethers_files(
    root: Path, kind: str, tether_dirs: dict[str, Path], what: str
) -> None:
    path = tether_dirs[what]
    r = await bash(context(root, kind), f"cat {path}; base64 {path}; cp {path} copy.txt")
    assert SECRET not in r.text and base64.b64encode(SECRET.encode()).decode()[:16] not in r.text
    assert not (root / "copy.txt").exists() or SECRET not in (root / "copy.txt").read_text()


async def test_a_worker_cannot_read_tethers_files(
    root: Path, kind: str, tether_dirs: dict[str, Path], tmp_path: Path
) -> None:
    folder = tool_folder(tmp_path / "tools")
    ctx = context(root, kind)
    for path in tether_dirs.values():
        r = await worker_sh(ctx, folder, f"base64 {path}")
        assert "exit code 0" not in r.text, r.text


async def test_another_sessions_private_tmp_is_unreadable(root: Path, kind: str) -> None:
    """Two live sessions (two Sandbox objects): one's private temp folder is invisible to the
    other's commands."""
    sandbox_for(kind)
    mine = context(root, kind)
    other_sb: Sandbox = (
        BwrapSandbox()
        if kind == "bwrap"
        else LandlockSandbox(
            sandbox_for(kind).abi  # type: ignore[attr-defined]
        )
    )
    (other_sb.tmp_dir / "private.txt").write_text(SECRET)
    assert mine.sandbox is not None and mine.sandbox.tmp_dir != other_sb.tmp_dir
    r = await bash(mine, f"cat {other_sb.tmp_dir}/private.txt; ls {other_sb.tmp_dir}")
    assert SECRET not in r.text and "cannot access" in r.text, r.text
    assert oct(other_sb.tmp_dir.parent.stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize(
    "name",
    [
        "PGPASSWORD",
        "DATABASE_URL",
        "SSH_AUTH_SOCK",
        "APP_SECRET_VALUE",
        "CI_JOB_TOKEN",
        "SIGNING_KEY",
    ],
)
async def test_secret_variables_by_convention_do_not_reach_tools(
    root: Path, kind: str, name: str, tmp_path: Path
) -> None:
    env = scrubbed_env({"PATH": os.environ["PATH"], name: SECRET})
    ctx = context(root, kind, env=env)
    r = await bash(ctx, f'echo "[${name}]"')
    assert r.text == "[]", r.text
    r = await worker_sh(ctx, tool_folder(tmp_path / "tools"), f'echo "[${name}]"')
    assert r.text.startswith("[]"), r.text


async def test_allow_env_lets_one_back(root: Path, kind: str) -> None:
    env = scrubbed_env(
        {"PATH": os.environ["PATH"], "DATABASE_URL": "postgres://t"}, allowed=["DATABASE_URL"]
    )
    r = await bash(context(root, kind, env=env), 'echo "[$DATABASE_URL]"')
    assert r.text == "[postgres://t]"


@pytest.mark.parametrize(
    "name", [".env", ".env.production", ".env.local", "sub/.env.staging", "prod.env"]
)
async def test_every_dotenv_variant_is_denied_to_the_file_tools(
    root: Path, kind: str, name: str
) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(f"KEY={SECRET}\n")
    ctx = context(root, kind)
    r = await call(ctx, "read", path=name)
    assert r.is_error and SECRET not in r.text, r.text
    r = await call(ctx, "grep", pattern="KEY")
    assert SECRET not in r.text


async def test_an_example_dotenv_stays_readable(root: Path, kind: str) -> None:
    (root / ".env.example").write_text("KEY=changeme\n")
    r = await call(context(root, kind), "read", path=".env.example")
    assert not r.is_error and "changeme" in r.text


async def test_a_hard_link_made_by_bash_does_not_defeat_the_deny_list(
    root: Path, kind: str
) -> None:
    (root / ".env.production").write_text(f"KEY={SECRET}\n")
    ctx = context(root, kind)
    r = await bash(ctx, "ln .env.production notes.txt && echo linked")
    # the command sees an empty file mounted over the secret: it cannot link the real one
    assert "Invalid cross-device link" in r.text and not (root / "notes.txt").exists(), r.text
    os.link(root / ".env.production", root / "notes.txt")  # a link made outside the sandbox
    r = await call(ctx, "read", path="notes.txt")
    assert r.is_error and SECRET not in r.text and "hard link" in r.text, r.text
    r = await call(ctx, "grep", pattern="KEY")
    assert SECRET not in r.text
