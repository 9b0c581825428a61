"""Providers declared in the settings (issue 39, audit row "provider class contract"): a
`providers.<name>` entry of type `openai-compatible` / `anthropic-compatible` with headers, an
auth scheme and a model-list URL is usable as `--model NAME/MODEL`, `tether models --test NAME`
checks it in one line, and a library class overrides only what differs. Against a loopback
endpoint that records every header (`kit.endpoint`)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from kit.cli import Completed, run_cli
from kit.endpoint import Endpoint
from tether.messages import text_turn
from tether.providers.base import ModelRequest, StreamDone, StreamError
from tether.providers.compatible import ConnectionResult, OpenAICompatibleProvider
from tether.providers.registry import resolve_provider
from tether.settings import AgentConfig

KEY = "gw-key-0123456789"


def _cli(tmp_path: Path, providers: dict[str, Any], *args: str) -> Completed:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"providers": providers}))
    return run_cli(list(args), tmp_path / "home", TETHER_CONFIG_DIR=str(config), GW_KEY=KEY)


def test_run_sends_the_entrys_headers_and_auth_scheme(tmp_path: Path) -> None:
    with Endpoint(answer="pong") as server:
        gw = {
            "type": "openai-compatible",
            "base_url": server.url,
            "headers": {"X-Tenant": "t1"},
            "auth": "api-key",
            "api_key_env": "GW_KEY",
        }
        proc = _cli(tmp_path, {"gw": gw}, "run", "--no-session", "--model", "gw/m1", "ping")
    assert proc.returncode == 0, proc.stderr
    assert "pong" in proc.stdout
    (request,) = server.requests
    assert request.path == "/v1/chat/completions" and request.body["model"] == "m1"
    assert request.headers["x-tenant"] == "t1" and request.headers["api-key"] == KEY
    assert "authorization" not in request.headers  # the SDK's own bearer header is dropped


async def test_anthropic_compatible_with_a_bearer_token() -> None:
    with Endpoint(answer="hello") as server:
        entry = {"type": "anthropic-compatible", "base_url": server.root, "auth": "bearer"}
        config = AgentConfig.model_validate({"providers": {"corp": entry}})
        provider = resolve_provider("corp/claude-x", api_key=KEY, providers=config.providers)
        request = ModelRequest(model="claude-x", messages=(text_turn("u", "user", "hi"),))
        events = [e async for e in provider.stream(request)]
    assert isinstance(events[-1], StreamDone), events[-1]
    (seen,) = server.requests
    assert seen.path == "/v1/messages"
    assert seen.headers["authorization"] == f"Bearer {KEY}" and "x-api-key" not in seen.headers


def test_models_test_one_line_and_exit_codes(tmp_path: Path) -> None:
    def entry(url: str, **more: Any) -> dict[str, Any]:
        return {"type": "openai-compatible", "base_url": url, "api_key_env": "GW_KEY", **more}

    with Endpoint(models=("m1", "m2")) as server:
        ok = _cli(tmp_path, {"gw": entry(server.url)}, "models", "--test", "gw")
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
        # no model list there: a one-token request instead
        bare = _cli(
            tmp_path, {"gw": entry(server.url, models_url=server.root + "/none")},
            "models", "--test", "gw",
        )  # fmt: skip
    assert ok.returncode == 0 and ok.stdout.startswith("gw: ok: 2 models (m1, m2)"), ok.stderr
    assert len(ok.stdout.splitlines()) == 1
    assert bare.returncode == 0 and "one-token request answered" in bare.stdout, bare.stdout
    with Endpoint(status=401) as server:
        denied = _cli(tmp_path, {"gw": entry(server.url)}, "models", "--test", "gw")
    assert denied.returncode == 2 and denied.stdout.startswith("gw: failed (auth)"), denied.stdout
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = _cli(tmp_path, {"gw": entry(f"http://127.0.0.1:{port}/v1")}, "models", "--test", "gw")
    assert down.returncode == 3 and down.stdout.startswith("gw: failed (network)"), down.stdout
    unknown = _cli(tmp_path, {}, "models", "--test", "nope")
    assert unknown.returncode == 1 and "providers.nope" in unknown.stderr
    assert "Traceback" not in unknown.stderr + down.stderr + denied.stderr


async def test_a_library_class_overrides_only_what_differs() -> None:
    class Signed(OpenAICompatibleProvider):
        """A gateway that signs instead of sending the key."""

        def auth_headers(self, key: str | None) -> dict[str, str]:
            return {"X-Signature": f"sig({key})"}

    with Endpoint(models=("a",), answer="signed") as server:
        provider = Signed("m", base_url=server.url, api_key=KEY)
        request = ModelRequest(model="m", messages=(text_turn("u", "user", "hi"),))
        events = [e async for e in provider.stream(request)]
        result = await provider.test_connection()
    assert not any(isinstance(e, StreamError) for e in events)
    assert isinstance(result, ConnectionResult) and result.ok and result.models == ("a",)
    for seen in server.requests:
        assert seen.headers["x-signature"] == f"sig({KEY})"
        assert "authorization" not in seen.headers
