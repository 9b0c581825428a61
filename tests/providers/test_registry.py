"""`--model provider/model` resolution and missing credentials (exit code 2 in the CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.cli import run_cli
from tether.errors import AuthError, ConfigError
from tether.providers.anthropic import AnthropicProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.registry import resolve_provider

KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in KEYS:
        monkeypatch.delenv(k, raising=False)


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4o",
        "anthropic/claude-sonnet-4-5",
        "openai-responses/gpt-5",
        "google/gemini-2.5-flash",
    ],
)
def test_missing_key_is_an_auth_error(model: str) -> None:
    with pytest.raises(AuthError):
        resolve_provider(model)


@pytest.mark.usefixtures("no_keys")
def test_a_base_url_needs_no_key() -> None:
    p = resolve_provider("openai/any", base_url="http://127.0.0.1:9/v1")
    assert isinstance(p, OpenAIChatProvider)
    # Anthropic's SDK cannot send a request without a key or token, whatever the endpoint:
    # a missing key is an auth error up front (issue 18 item 16), not a TypeError later.
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        resolve_provider("anthropic/m", base_url="http://127.0.0.1:9")


def test_anthropic_auth_token_counts_as_a_credential(
    no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok")
    assert isinstance(resolve_provider("anthropic/m"), AnthropicProvider)


@pytest.mark.parametrize("model", ["nope/x", "openai", "openai/", "local/does-not-exist.gguf"])
def test_bad_model_strings_are_config_errors(model: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_provider(model)
    assert not isinstance(info.value, AuthError)


def test_new_providers_resolve(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.providers.google import GoogleProvider
    from tether.providers.ollama import OllamaProvider
    from tether.providers.openai_responses import OpenAIResponsesProvider

    monkeypatch.setenv("GOOGLE_API_KEY", "g")
    g = resolve_provider("google/gemini-2.5-flash")
    assert isinstance(g, GoogleProvider) and g.model == "gemini-2.5-flash" and g.target == "google"
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    r = resolve_provider("openai-responses/gpt-5-mini")
    assert isinstance(r, OpenAIResponsesProvider) and r.target == "openai-responses"
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    o = resolve_provider("ollama/qwen3:8b")
    assert isinstance(o, OllamaProvider) and o.model == "qwen3:8b"
    assert o.host == "http://127.0.0.1:11434"
    o2 = resolve_provider("ollama/qwen3", base_url="http://gpu-box:11434")
    assert isinstance(o2, OllamaProvider) and o2.host == "http://gpu-box:11434"


def test_gemini_key_wins_over_google_key(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.providers.google import GoogleProvider

    monkeypatch.setenv("GEMINI_API_KEY", "gem")
    monkeypatch.setenv("GOOGLE_API_KEY", "goo")
    g = resolve_provider("google/gemini-2.5-flash")
    assert isinstance(g, GoogleProvider)
    assert g._client._api_client.api_key == "gem"  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("model", ["google/gemini-2.5-flash", "openai-responses/gpt-5"])
def test_cli_missing_key_exits_2(model: str, tmp_path: Path) -> None:
    out = run_cli(
        ["run", "--model", model, "--no-session", "--cwd", str(tmp_path), "hi"],
        tmp_path / "home",
        TETHER_CONFIG_DIR=str(tmp_path / "config"),
    )
    assert out.returncode == 2, out.stderr
    assert "API key" in out.stderr
