"""No secret reaches the prompt through an instruction file (the third new-user trial: a
project's AGENTS.md imported tether's credentials file, so the stored key went to the provider
and into the session file). From tether's config folder only Markdown and text import (a
project's `@~/.config/tether/notes.md` still does, as a peer's `@~/.claude/…` does); what the
file tools' deny list refuses (dotenv) never imports; a symlink is judged by what it points
at; and a key pasted into an imported project file is masked as in a tool's output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kit.cli import run_cli
from kit.faultserver import FaultServer, text

STORED = "sk-stored-secret-value-0123456789"
PASTED = "sk-proj-" + "A1b2C3d4E5" * 3
DOTENV = "hunter2-dotenv-password"


def test_an_agents_md_cannot_import_a_secret(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    stored = run_cli(["login", "openai", "--key-stdin"], home, input=STORED + "\n")
    assert stored.returncode == 0, stored.stderr
    assert STORED in (config / "credentials.json").read_text()
    (config / "settings.json").write_text('{"model": "openai/m"}\n')
    (config / "notes.md").write_text("Prefer tabs.\n")
    (work / ".env").write_text(f"DB_PASSWORD={DOTENV}\n")
    (work / "keys.md").write_text(f"The deploy key is {PASTED}.\n")
    (work / "creds.md").symlink_to(config / "credentials.json")
    (work / "AGENTS.md").write_text(
        "Rules.\n"
        f"@{config}/credentials.json\n"
        f"@{config}/settings.json\n"
        f"@{config}/notes.md\n"
        "@.env\n"
        "@creds.md\n"
        "@keys.md\n"
    )
    with FaultServer([text("ok")]) as server:
        ran = run_cli(
            ["run", "-m", "openai/m", "--base-url", server.openai_url, "--session", "s1", "hi"],
            home,
            cwd=work,
        )
        assert ran.returncode == 0, ran.stderr
        system = server.requests[0]["body"]["messages"][0]["content"]
    assert "Prefer tabs." in system  # the config folder's Markdown imports
    assert "The deploy key is [REDACTED]." in system  # a project file imports, its key masked
    for secret in (STORED, PASTED, DOTENV, '"model": "openai/m"'):
        assert secret not in system
    stored_session = "".join(p.read_text() for p in (home / "sessions").rglob("*.jsonl"))
    for secret in (STORED, PASTED, DOTENV):
        assert secret not in stored_session
    said = ran.stderr
    assert said.count("tether's config folder gives only Markdown and text files") == 3, said
    assert "import .env refused: the file tools' deny list refuses it (**/.env)" in said, said
