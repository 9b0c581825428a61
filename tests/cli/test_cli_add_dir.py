"""`--add-dir PATH[:ro]` on `tether run` (and `acp`): the model's write lands in the extra
folder, a `:ro` folder is read only, a missing folder or one holding tether's own folders is
one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text, tool
from kit.sandbox import sandbox_or_skip


def run(server: FaultServer, home: Path, work: Path, *args: str) -> Completed:
    return run_cli(
        ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", *args],
        home,
        cwd=work,
        TETHER_SANDBOX=sandbox_or_skip(),
    )


def test_the_model_writes_in_the_extra_folder_not_in_a_read_only_one(tmp_path: Path) -> None:
    home, work, extra, ref = (tmp_path / n for n in ("home", "work", "extra", "ref"))
    for d in (work, extra, ref):
        d.mkdir()
    script = [
        tool("write", path=str(extra / "out.txt"), content="made"),
        tool("write", path=str(ref / "no.txt"), content="no"),
        text("done"),
    ]
    with FaultServer(script) as server:
        proc = run(server, home, work, "--add-dir", str(extra), "--add-dir", f"{ref}:ro", "go")
        bodies = [r["body"] for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert (extra / "out.txt").read_text() == "made" and not (ref / "no.txt").exists()
    system = bodies[0]["messages"][0]["content"]
    assert f"{extra.resolve()} (read-write)" in system and f"{ref.resolve()} (read-only)" in system
    results = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert "created" in results[0] and "read-only" in results[1], results


def test_a_bad_folder_is_one_line_and_exit_1(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([]) as server:
        missing = run(server, home, work, "--add-dir", "nowhere", "go")
        holding = run(server, home, work, "--add-dir", str(tmp_path), "go")  # holds TETHER_HOME
        assert server.requests == []
    assert missing.returncode == 1 and holding.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"tether: --add-dir nowhere: {work.resolve() / 'nowhere'} is not a folder"
    ] or (len(missing.stderr.strip().splitlines()) == 1 and "is not a folder" in missing.stderr)
    assert len(holding.stderr.strip().splitlines()) == 1 and "tether's own" in holding.stderr
    acp = run_cli(["acp", "--add-dir", "nowhere"], home, cwd=work)
    assert acp.returncode == 1 and "is not a folder" in acp.stderr and "Traceback" not in acp.stderr


def test_the_flag_adds_to_the_settings_folders(tmp_path: Path) -> None:
    """`--add-dir` adds to `tools.add_dirs` of the settings, as Claude Code's flag adds to
    `additionalDirectories`; it used to replace them."""
    home, work, kept, added = (tmp_path / n for n in ("home", "work", "kept", "added"))
    for d in (work, kept, added, work / ".tether"):
        d.mkdir()
    (work / ".tether" / "settings.json").write_text(json.dumps({"tools": {"add_dirs": [str(kept)]}}))
    with FaultServer([text("done")]) as server:
        proc = run(server, home, work, "--add-dir", str(added), "--add-dir", str(kept), "go")
        system = server.requests[0]["body"]["messages"][0]["content"]
    assert proc.returncode == 0, proc.stderr
    assert f"{kept.resolve()} (read-write)" in system and f"{added.resolve()} (read-write)" in system
    assert system.count(str(kept.resolve())) == 1  # named twice, listed once


def test_rw_says_read_write_explicitly(tmp_path: Path) -> None:
    """The trial's `--add-dir DIR:rw` was "DIR:rw is not a folder": `:rw` is read-write, as
    the folder alone is (`:ro` read-only)."""
    from tether.sandbox.policy import parse_add_dir

    (tmp_path / "d").mkdir()
    real = str((tmp_path / "d").resolve())
    assert parse_add_dir("d:rw", tmp_path) == (real, True) == parse_add_dir("d", tmp_path)
    assert parse_add_dir("d:ro", tmp_path) == (real, False)
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    done = run_cli(["acp", "--add-dir", f"{tmp_path / 'nowhere'}:rw"], home, cwd=work)
    assert done.returncode == 1 and f"{tmp_path / 'nowhere'} is not a folder" in done.stderr
