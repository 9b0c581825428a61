"""`tether models`: live listing from a loopback server (OpenAI `/v1/models`, Ollama
`/api/tags`), then the cache when the server is gone, then the bundled list."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kit.cli import run_cli
from tether.errors import ConfigError
from tether.providers.models import BUNDLED as KNOWN_MODELS
from tether.providers.models import cache_path, list_models, read_cache

OPENAI_MODELS = {
    "object": "list",
    "data": [
        {"id": "qwen2.5-coder-7b", "object": "model", "created": 1, "owned_by": "vllm"},
        {"id": "llama-3.1-8b", "object": "model", "created": 1, "owned_by": "vllm"},
    ],
}
OLLAMA_TAGS = {
    "models": [
        {
            "name": "qwen3:8b",
            "model": "qwen3:8b",
            "modified_at": "2025-05-01T10:00:00Z",
            "size": 5,
            "digest": "d",
        },
        {
            "name": "llama3.1:latest",
            "model": "llama3.1:latest",
            "modified_at": "2025-05-01T10:00:00Z",
            "size": 5,
            "digest": "e",
        },
    ]
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        routes = {"/v1/models": OPENAI_MODELS, "/api/tags": OLLAMA_TAGS}
        body = routes.get(self.path.split("?")[0])
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _dead_url() -> str:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.server_close()
    return url


async def test_openai_compatible_live_then_cache(server: str, tmp_path: Path) -> None:
    base = f"{server}/v1"
    live = await list_models("openai", base_url=base, cache_dir=tmp_path, clock_ms=lambda: 1234)
    assert live.source == "provider" and live.note is None
    assert live.models == ("llama-3.1-8b", "qwen2.5-coder-7b")
    assert read_cache(cache_path("openai", base, tmp_path)) == (list(live.models), 1234)
    # The same base URL, now unreachable: the cached listing, saying why.
    path = cache_path("openai", base, tmp_path)
    dead = _dead_url() + "/v1"
    path.rename(cache_path("openai", dead, tmp_path))
    cached = await list_models("openai", base_url=dead, cache_dir=tmp_path, timeout_s=2)
    assert cached.source == "cache" and cached.models == live.models and cached.fetched_ms == 1234
    assert cached.note is not None and cached.note.startswith("network")


async def test_ollama_tags(server: str, tmp_path: Path) -> None:
    live = await list_models("ollama", base_url=server, cache_dir=tmp_path)
    assert live.source == "provider" and live.models == ("llama3.1:latest", "qwen3:8b")


async def test_unreachable_without_cache_is_bundled(tmp_path: Path) -> None:
    got = await list_models("ollama", base_url=_dead_url(), cache_dir=tmp_path, timeout_s=2)
    assert got.source == "bundled" and got.models == KNOWN_MODELS["ollama"]
    assert got.note


async def test_missing_key_falls_back_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    got = await list_models("google", cache_dir=tmp_path)
    assert got.source == "bundled" and "GEMINI_API_KEY" in (got.note or "")


async def test_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    dead = _dead_url()
    path = cache_path("ollama", dead, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"models": [1, 2]}')
    got = await list_models("ollama", base_url=dead, cache_dir=tmp_path, timeout_s=2)
    assert got.source == "bundled"


async def test_unknown_provider_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        await list_models("nope", cache_dir=tmp_path)


def test_cli_models_command(server: str, tmp_path: Path) -> None:
    out = run_cli(["models", "ollama", "--base-url", server], tmp_path, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    row = json.loads(line)
    assert row["provider"] == "ollama" and row["source"] == "provider"
    assert row["models"] == ["llama3.1:latest", "qwen3:8b"]
    assert "2 models from provider" in out.stderr
    assert list((tmp_path / "cache" / "models").iterdir())  # cached under TETHER_HOME
    dead = run_cli(["models", "ollama", "--base-url", _dead_url()], tmp_path, cwd=tmp_path)
    assert "(the live listing failed: network" in dead.stderr, dead.stderr  # says what failed
    bad = run_cli(["models", "nope"], tmp_path, cwd=tmp_path)
    assert bad.returncode == 1 and "unknown provider" in bad.stderr
