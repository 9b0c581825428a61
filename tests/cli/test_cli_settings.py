"""`tether config show|set`, `tether login|logout`, and `tether run` reading the settings
(in process, with TETHER_CONFIG_DIR in a tmp folder and the keyring forced to the fail backend;
the key prompt on a real terminal runs a `tether` process on a pty)."""

from __future__ import annotations

import itertools
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kit.cli import SRC, Completed, run_cli

KEY = "sk-stored-" + "q7" * 12


def tether(args: list[str], tmp: Path, stdin: str = "", cwd: Path | None = None) -> Completed:
    """`tether ARGS` in process, settings under `tmp/cfg`, home `tmp/home`, in `tmp/proj`."""
    proj = cwd or tmp / "proj"
    proj.mkdir(exist_ok=True)
    return run_cli(args, tmp / "home", cwd=proj, input=stdin, TETHER_CONFIG_DIR=str(tmp / "cfg"))


def show(tmp: Path) -> dict[str, Any]:
    proc = tether(["config", "show"], tmp)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_config_show_defaults_then_merged_files(tmp_path: Path) -> None:
    out = show(tmp_path)
    assert out["sources"] == []
    assert out["settings"]["tools"]["timeout"] == "2m"
    assert out["settings"]["run"]["max_turns"] == 50
    user = tmp_path / "cfg" / "settings.json"
    user.parent.mkdir()
    user.write_text(json.dumps({"tools": {"timeout": "30s", "deny_paths": ["a"]}}))
    proj = tmp_path / "proj" / ".tether" / "settings.json"
    proj.parent.mkdir(parents=True)
    proj.write_text(json.dumps({"tools": {"deny_paths": ["b"]}, "run": {"max_turns": 4}}))
    out = show(tmp_path)
    assert out["sources"] == [str(user), str(proj)]
    assert out["settings"]["tools"]["timeout"] == "30s"
    assert out["settings"]["tools"]["deny_paths"] == ["b", "a"]
    assert out["settings"]["run"]["max_turns"] == 4


def test_config_set_user_and_project(tmp_path: Path) -> None:
    assert tether(["config", "set", "tools.timeout", "45s"], tmp_path).returncode == 0
    proc = tether(["config", "set", "--project", "model", '["openai/gpt-4o", "local"]'], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "settings.json" in proc.stderr
    out = show(tmp_path)
    assert out["settings"]["tools"]["timeout"] == "45s"
    assert out["settings"]["model"] == ["openai/gpt-4o", "local"]
    assert json.loads((tmp_path / "cfg" / "settings.json").read_text()) == {
        "tools": {"timeout": "45s"}
    }


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["config", "set", "tools.timeout", "soon"], "tools.timeout: 'soon' is not a duration"),
        (["config", "set", "tools.nope", "1"], "tools.nope"),
        (["config", "set", "a..b", "1"], "bad settings key"),
    ],
)
def test_config_set_rejects_bad_values_and_keeps_the_file(
    tmp_path: Path, args: list[str], says: str
) -> None:
    assert tether(["config", "set", "run.max_turns", "7"], tmp_path).returncode == 0
    path = tmp_path / "cfg" / "settings.json"
    before = path.read_bytes()
    proc = tether(args, tmp_path)
    assert proc.returncode == 1 and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"run": {"max_turns": 0}}', "run.max_turns"),
        ('{"run": \n  {"max_turns": 3,}}', "line 2, column 19"),
    ],
)
def test_bad_settings_files_exit_1_naming_file_and_place(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "proj" / ".tether" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert tether(["trust"], tmp_path).returncode == 0  # approved: the run then reads it
    for args in (["config", "show"], ["run", "--no-session", "hi"]):
        proc = tether(args, tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert str(path) in proc.stderr and says in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_login_takes_a_variable_an_mcp_server_uses(tmp_path: Path) -> None:
    """docs/mcp.md: `${VAR}` in an MCP server's settings comes from `tether login VAR`."""
    server = {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}
    proc = tether(["config", "set", "mcp.servers.gh", json.dumps(server)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = tether(["login", "GH_TOKEN", "--key-stdin"], tmp_path, stdin=KEY)
    assert proc.returncode == 0, proc.stderr
    proc = tether(["login", "GH_TOKN", "--key-stdin"], tmp_path, stdin=KEY)
    assert proc.returncode == 1 and "unknown provider 'GH_TOKN'" in proc.stderr


def test_login_key_stdin_then_logout(tmp_path: Path) -> None:
    """`x` is a provider the settings declare; a second logout has nothing to remove: exit 1."""
    endpoint = json.dumps({"type": "openai", "base_url": "http://127.0.0.1:9/v1"})
    assert tether(["config", "set", "providers.x", endpoint], tmp_path).returncode == 0
    proc = tether(["login", "x", "--key-stdin"], tmp_path, stdin=KEY + "\nignored\n")
    assert proc.returncode == 0, proc.stderr
    assert "stored the x key in the file" in proc.stderr
    path = tmp_path / "cfg" / "credentials.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text())["keys"] == {"x": KEY}
    assert KEY not in proc.stderr + proc.stdout
    proc = tether(["logout", "x"], tmp_path)
    assert proc.returncode == 0 and "removed the x key from: file" in proc.stderr
    proc = tether(["logout", "x"], tmp_path)
    assert proc.returncode == 1 and "no stored x key: nothing removed" in proc.stderr
    assert json.loads(path.read_text())["keys"] == {}
    proc = tether(["logout", "nosuch"], tmp_path)
    assert proc.returncode == 1 and "no stored nosuch key" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        (["login", "anthropic"], "", "--key-stdin"),  # no terminal, no --key-stdin
        (["login", "anthropic", "--key-stdin"], "\n", "empty key"),
        (
            ["login", "anthropic", "--key-stdin", "--store", "keyring"],
            KEY,
            "no usable system keyring",
        ),
        (["login", "anthropic", "--store", "vault"], KEY, "vault"),
        (["login", "a b", "--key-stdin"], KEY, "bad provider name"),
        (  # a typo: refused with the names, not stored under it
            ["login", "antropic", "--key-stdin"],
            KEY,
            "unknown provider 'antropic'; use one of: anthropic, openai, openai-responses, "
            "google, ollama (or declare providers.<name> in the settings;",
        ),
        (["login", "nosuch"], "", "unknown provider 'nosuch'"),  # the name first, then stdin
    ],
)
def test_login_refusals(tmp_path: Path, args: list[str], stdin: str, says: str) -> None:
    proc = tether(args, tmp_path, stdin=stdin)
    assert proc.returncode == 1 and says in proc.stderr, proc.stderr
    assert not (tmp_path / "cfg" / "credentials.json").exists()


class _ToolCallServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that always answers with one `ls` tool call (SSE)."""

    seen: ClassVar[list[dict[str, Any]]] = []
    ids = itertools.count()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append({"auth": self.headers.get("authorization"), "body": body})
        n = next(self.ids)
        chunks: list[dict[str, Any]] = [
            {
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": f"c{n}",
                            "type": "function",
                            "function": {"name": "ls", "arguments": "{}"},
                        }
                    ],
                },
                "finish_reason": None,
            },
            {"delta": {}, "finish_reason": "tool_calls"},
        ]
        data = (
            "".join(
                "data: "
                + json.dumps(
                    {
                        "id": "r",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": "m",
                        "choices": [{"index": 0, **c}],
                    }
                )
                + "\n\n"
                for c in chunks
            )
            + "data: [DONE]\n\n"
        )
        raw = data.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _ToolCallServer.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _ToolCallServer)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_run_uses_model_endpoint_key_and_max_turns_from_settings(
    tmp_path: Path, server: str
) -> None:
    for key, value in [
        ("providers.work", json.dumps({"type": "openai", "base_url": server})),
        ("model", '["anthropic/claude-x", "work/m-from-settings"]'),  # no anthropic key
        ("run.max_turns", "2"),
    ]:
        assert tether(["config", "set", key, value], tmp_path).returncode == 0
    assert tether(["login", "work", "--key-stdin"], tmp_path, stdin=KEY).returncode == 0
    proc = tether(["run", "--no-session", "list files"], tmp_path)
    assert proc.returncode == 1, proc.stderr  # --max-turns reached before an answer
    assert "skipping model 'anthropic/claude-x'" in proc.stderr
    seen = _ToolCallServer.seen
    assert len(seen) == 2  # run.max_turns
    assert {s["auth"] for s in seen} == {f"Bearer {KEY}"}  # the stored key, sent to base_url
    assert {s["body"]["model"] for s in seen} == {"m-from-settings"}
    done = json.loads(proc.stdout.splitlines()[-1])
    assert done["type"] == "done"
    assert KEY not in proc.stdout


def test_cli_flags_win_over_settings(tmp_path: Path, server: str) -> None:
    assert tether(["config", "set", "run.max_turns", "5"], tmp_path).returncode == 0
    assert tether(["config", "set", "model", "anthropic/claude-x"], tmp_path).returncode == 0
    proc = tether(
        [
            "run",
            "--no-session",
            "--model",
            "openai/m2",
            "--base-url",
            server,
            "--max-turns",
            "1",
            "go",
        ],
        tmp_path,
    )
    assert proc.returncode == 1, proc.stderr  # --max-turns reached before an answer
    assert len(_ToolCallServer.seen) == 1
    assert _ToolCallServer.seen[0]["body"]["model"] == "m2"


def test_a_project_base_url_is_noted(tmp_path: Path, server: str) -> None:
    (tmp_path / "proj").mkdir()
    proc = tether(
        ["config", "set", "--project", "providers.openai", json.dumps({"base_url": server})],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    proc = tether(
        ["run", "--no-session", "--model", "openai/m", "--max-turns", "1", "hi"], tmp_path
    )
    assert proc.returncode == 1, proc.stderr  # --max-turns reached before an answer
    assert f"uses base_url {server!r} from the project settings" in proc.stderr


def test_settings_model_without_key_is_an_auth_error(tmp_path: Path) -> None:
    assert tether(["config", "set", "model", "anthropic/claude-x"], tmp_path).returncode == 0
    proc = tether(["run", "--no-session", "hi"], tmp_path)
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr and "tether login anthropic" in proc.stderr


@pytest.mark.parametrize("key", [b"\x04", b"\x03"], ids=["ctrl-d", "ctrl-c"])
def test_ctrl_d_or_ctrl_c_at_the_key_prompt_cancels_with_130_and_no_traceback(
    tmp_path: Path, key: bytes
) -> None:
    """The key prompt on a real terminal (a pty): typer's prompt raises its own `Abort` on
    Ctrl-D / Ctrl-C (typer >= 0.26 vendors click, so `click.exceptions.Abort` does not match
    it); the CLI says `cancelled`, exits 130, prints no traceback and stores nothing."""
    import pty
    import select
    import signal
    import time

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_AUTH_TOKEN")) and not k.startswith("TETHER_")
    }
    env |= {
        "PYTHONPATH": SRC,
        "TETHER_CONFIG_DIR": str(tmp_path / "cfg"),
        "TETHER_HOME": str(tmp_path / "home"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    pid, fd = pty.fork()  # the child's controlling terminal is the pty: the prompt shows
    if pid == 0:  # pragma: no cover - the child
        os.execve(sys.executable, [sys.executable, "-m", "tether.cli", "login", "openai"], env)
    out = b""
    deadline = time.monotonic() + 60
    sent = 0.0  # when the key was last sent: getpass flushes input typed before it turns the
    # echo off (TCSAFLUSH), so a key sent in that instant is lost and is sent again
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        if b"API key" in out and time.monotonic() - sent > 1.0:
            os.write(fd, key)
            sent = time.monotonic()
    done, status = os.waitpid(pid, os.WNOHANG)
    grace = time.monotonic() + 10
    while not done and time.monotonic() < grace:  # the terminal closes just before the exit
        time.sleep(0.05)
        done, status = os.waitpid(pid, os.WNOHANG)
    if not done:  # still running: fail, never hang
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert sent, out
    assert os.waitstatus_to_exitcode(status) == 130, out
    assert b"cancelled" in out and b"Traceback" not in out, out
    assert not (tmp_path / "cfg" / "credentials.json").exists()
