"""`tether config get KEY` / `config unset KEY` (user file, or `--project`), and `config set
model` checking the provider as `--model` does (the third trial: no get/unset, and `config set
model bogus/x` was written)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kit.cli import run_cli as tether


def _user_file() -> Path:
    return Path(os.environ["TETHER_CONFIG_DIR"]) / "settings.json"


def test_get_prints_a_value_and_unset_removes_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert tether(["config", "set", "tools.timeout", "30s"], home).returncode == 0
    assert tether(["config", "set", "model", "openai/gpt-4o"], home).returncode == 0
    got = tether(["config", "get", "model"], home)
    assert (got.returncode, got.stdout) == (0, "openai/gpt-4o\n")
    got = tether(["config", "get", "tools"], home)
    assert json.loads(got.stdout) == {"timeout": "30s"}

    gone = tether(["config", "unset", "tools.timeout"], home)
    assert gone.returncode == 0, gone.stderr
    assert json.loads(_user_file().read_text()) == {"model": "openai/gpt-4o"}  # empty parent too

    again = tether(["config", "unset", "tools.timeout"], home)
    assert again.returncode == 1
    assert again.stderr == f"tether: tools.timeout is not set in {_user_file()}\n"
    missing = tether(["config", "get", "tools.timeout"], home)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == f'tether: tools.timeout is not set in {_user_file()} (in force: "2m")\n'


def test_project_get_and_unset_keep_the_project_approved(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    project = work / ".tether" / "settings.json"
    assert tether(["config", "set", "--project", "run.max_turns", "7"], home, cwd=work).returncode == 0
    assert tether(["config", "set", "--project", "tools.timeout", "9s"], home, cwd=work).returncode == 0
    got = tether(["config", "get", "--project", "run.max_turns"], home, cwd=work)
    assert (got.returncode, got.stdout) == (0, "7\n")
    assert tether(["config", "get", "run.max_turns"], home, cwd=work).returncode == 1  # user file

    gone = tether(["config", "unset", "--project", "run.max_turns"], home, cwd=work)
    assert gone.returncode == 0, gone.stderr
    assert json.loads(project.read_text()) == {"tools": {"timeout": "9s"}}
    shown = tether(["config", "show"], home, cwd=work)
    assert "not approved" not in shown.stderr
    listed = tether(["permissions", "list"], home, cwd=work)
    assert "not approved" not in listed.stderr


def test_set_model_refuses_an_unknown_provider_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = tether(["config", "set", "model", "bogus/x"], home)
    assert out.returncode == 1
    assert out.stderr.startswith("tether: unknown provider 'bogus' in the settings' model 'bogus/x'")
    assert len(out.stderr.splitlines()) == 1
    assert not _user_file().exists()
    listed = tether(["config", "set", "model", '["openai/gpt-4o", "bogus/y"]'], home)
    assert listed.returncode == 1 and not _user_file().exists()
    # a provider the settings declare is known
    providers = '{"gw": {"type": "openai", "base_url": "http://127.0.0.1:9/v1"}}'
    assert tether(["config", "set", "providers", providers], home).returncode == 0
    assert tether(["config", "set", "model", "gw/m"], home).returncode == 0
    assert json.loads(_user_file().read_text())["model"] == "gw/m"
