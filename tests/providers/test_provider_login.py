"""The provider class's optional login hook (`tether.providers.login`): `tether login` runs the
provider's own flow (Ollama and the embedded model: none needed, nothing stored), else asks for
the key as before; a library provider's flow (here a gateway that issues a token for a user and
password, on loopback) stores what it returns where `tether run` looks keys up."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from kit.cli import run_cli
from tether.credentials import lookup_key
from tether.errors import ConfigError
from tether.providers.compatible import OpenAICompatibleProvider
from tether.providers.login import LoginIO, login_provider

KEY = "sk-test-0123456789"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("ollama", "ollama: no login needed: a local Ollama server takes no key"),
        ("local", "local: no login needed: the embedded model runs on this machine"),
    ],
)
def test_a_provider_without_keys_stores_nothing(tmp_path: Path, name: str, says: str) -> None:
    proc = run_cli(
        ["login", name, "--key-stdin"],
        tmp_path,
        input=KEY + "\n",
        TETHER_CONFIG_DIR=str(tmp_path / "cfg"),
    )
    assert proc.returncode == 0, proc.stderr
    assert says in proc.stderr and "stored" not in proc.stderr.replace("nothing stored", "")
    assert not (tmp_path / "cfg" / "credentials.json").exists()


def test_a_provider_without_a_hook_gets_the_key_prompt(tmp_path: Path) -> None:
    proc = run_cli(
        ["login", "openai", "--key-stdin", "--store", "file"],
        tmp_path,
        input=KEY,
        TETHER_CONFIG_DIR=str(tmp_path / "cfg"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "stored the openai key in the file" in proc.stderr
    path = tmp_path / "cfg" / "credentials.json"
    assert json.loads(path.read_text())["keys"] == {"openai": KEY}


class _TokenHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        good = body == {"user": "ada", "password": "lovelace"}
        payload = json.dumps({"token": "gw-token-42"} if good else {"error": "bad login"})
        self.send_response(200 if good else 401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload.encode())


@pytest.fixture
def token_server() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TokenHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/token"
    server.shutdown()
    server.server_close()


class _Answers:
    """A user who answers from a list and whose lines are kept."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, bool]] = []
        self.said: list[str] = []

    def ask(self, prompt: str, *, secret: bool = True) -> str:
        self.asked.append((prompt, secret))
        return self.answers.pop(0)

    def say(self, line: str) -> None:
        self.said.append(line)


def _gateway(url: str) -> type:
    class Gateway(OpenAICompatibleProvider):
        """A library provider: only the login differs from the OpenAI-compatible defaults."""

        @staticmethod
        async def login(name: str, io: LoginIO) -> str | None:
            user = io.ask("user", secret=False)
            password = io.ask("password")
            async with httpx.AsyncClient() as client:
                got = await client.post(url, json={"user": user, "password": password})
            if got.status_code != 200:
                raise ConfigError(f"{name}: the gateway refused the login ({got.status_code})")
            io.say(f"{name}: logged in as {user}")
            return str(got.json()["token"])

    return Gateway


async def test_a_library_providers_login_flow_stores_its_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token_server: str
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    io = _Answers("ada", "lovelace")
    outcome = await login_provider(_gateway(token_server), "corp", io, store="file")
    assert outcome.where == "file"
    assert io.asked == [("user", False), ("password", True)]
    assert io.said == ["corp: logged in as ada"]
    assert lookup_key("corp", type_="openai-compatible") == "gw-token-42"

    with pytest.raises(ConfigError, match="refused the login"):
        await login_provider(_gateway(token_server), "corp", _Answers("ada", "x"), store="file")
    # a failed login changes nothing
    assert lookup_key("corp", type_="openai-compatible") == "gw-token-42"


async def test_a_hook_that_returns_no_string_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))

    class Broken:
        @staticmethod
        def login(name: str, io: LoginIO) -> Any:
            return 42

    with pytest.raises(ConfigError, match=r"^x: the login flow returned no credential$"):
        await login_provider(Broken, "x", _Answers())


def test_every_provider_type_names_its_adapter_class() -> None:
    """`provider_class` answers every built-in type with the adapter `resolve_provider` builds
    for it, a settings entry's compatible type with its class, and refuses other names."""
    from tether.errors import ConfigError
    from tether.providers.registry import PROVIDERS, provider_class, resolve_provider
    from tether.settings.model import ProviderSettings

    for type_ in PROVIDERS:
        got_type, cls = provider_class(type_)
        assert got_type == type_ and callable(getattr(cls, "stream", None)), cls
        if type_ == "ollama":  # built without a key or a model file
            assert type(resolve_provider(f"{type_}/m")) is cls
    entry = {
        "gw": ProviderSettings.model_validate(
            {"type": "openai-compatible", "base_url": "http://127.0.0.1:1/v1"}
        )
    }
    assert provider_class("gw", providers=entry)[1].__name__ == "OpenAICompatibleProvider"
    with pytest.raises(ConfigError, match="unknown provider"):
        provider_class("antropic")
