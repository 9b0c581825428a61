"""Credentials: keyring and 0600 credential file, logout, lookup order, and that keys never reach
tool subprocesses (tether.credentials, tether.providers.registry)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest
from keyring.backends import fail
from keyring.errors import PasswordDeleteError, PasswordSetError

from tether.agent.agent import Agent
from tether.credentials import (
    KEYRING_SERVICE,
    credentials_path,
    find_key,
    keyring_usable,
    lookup_key,
    remove_key,
    store_key,
)
from tether.errors import AuthError, ConfigError
from tether.messages import ToolResultBlock
from tether.providers.anthropic import AnthropicProvider
from tether.providers.google import GoogleProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.registry import resolve_provider
from tether.settings import ProviderSettings
from tether.testing import ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools

KEY = "sk-ant-api03-" + "Zx9" * 12
KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "WORK_KEY",
)


class MemoryKeyring(keyring.backend.KeyringBackend):
    """An in-memory keyring backend for tests."""

    priority = 1  # type: ignore[assignment]

    def __init__(self, *, refuse: bool = False) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}
        self.refuse = refuse

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.refuse:
            raise PasswordSetError("locked")
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.store:
            raise PasswordDeleteError("not found")
        del self.store[(service, username)]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def memory() -> MemoryKeyring:
    kr = MemoryKeyring()
    keyring.set_keyring(kr)
    return kr


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# --- the credential file -----------------------------------------------------------------------


def test_no_backend_falls_back_to_a_0600_file() -> None:
    assert not keyring_usable()
    where, place = store_key("anthropic", f"  {KEY}\n")
    path = credentials_path()
    assert (where, place) == ("file", str(path))
    assert mode_of(path) == 0o600
    assert mode_of(path.parent) == 0o700
    assert json.loads(path.read_text()) == {"version": 1, "keys": {"anthropic": KEY}}
    assert find_key("anthropic") == find_key("anthropic", environ={})
    found = find_key("anthropic")
    assert found is not None and (found.key, found.source, found.detail) == (KEY, "file", str(path))


def test_file_is_0600_even_with_a_permissive_umask_and_replaces_a_wide_file() -> None:
    path = credentials_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "keys": {"openai": "old"}}')
    path.chmod(0o644)
    old = os.umask(0)
    try:
        store_key("anthropic", KEY, store="file")
    finally:
        os.umask(old)
    assert mode_of(path) == 0o600
    assert json.loads(path.read_text())["keys"] == {"anthropic": KEY, "openai": "old"}
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


def test_a_group_readable_file_is_refused_with_the_fix() -> None:
    store_key("anthropic", KEY, store="file")
    credentials_path().chmod(0o640)
    with pytest.raises(ConfigError, match="chmod 600"):
        find_key("anthropic")


def test_a_malformed_file_is_a_config_error() -> None:
    path = credentials_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"keys": ')
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="line 1"):
        find_key("anthropic")
    path.write_text('{"keys": {"anthropic": 5}}')
    with pytest.raises(ConfigError, match="expected"):
        find_key("anthropic")


@pytest.mark.parametrize(
    ("name", "key"),
    [("bad name", KEY), ("../x", KEY), ("", KEY), ("anthropic", "  \n"), ("anthropic", "a\nb")],
)
def test_bad_names_and_empty_keys_store_nothing(name: str, key: str) -> None:
    with pytest.raises(ConfigError):
        store_key(name, key, store="file")
    assert not credentials_path().exists()


# --- the keyring -------------------------------------------------------------------------------


def test_a_usable_keyring_is_preferred(memory: MemoryKeyring) -> None:
    assert keyring_usable()
    where, _ = store_key("anthropic", KEY)
    assert where == "keyring"
    assert memory.store == {(KEYRING_SERVICE, "anthropic"): KEY}
    assert not credentials_path().exists()
    found = find_key("anthropic")
    assert found is not None and (found.key, found.source) == (KEY, "keyring")


def test_storing_in_the_keyring_drops_an_older_file_entry(memory: MemoryKeyring) -> None:
    store_key("anthropic", "old-key", store="file")
    store_key("anthropic", KEY)
    assert json.loads(credentials_path().read_text())["keys"] == {}
    assert lookup_key("anthropic") == KEY


def test_explicit_keyring_without_a_backend_is_an_error() -> None:
    with pytest.raises(ConfigError, match="--store file"):
        store_key("anthropic", KEY, store="keyring")
    assert not credentials_path().exists()


def test_a_refusing_backend_falls_back_unless_the_keyring_was_asked_for() -> None:
    keyring.set_keyring(MemoryKeyring(refuse=True))
    with pytest.raises(ConfigError, match="refused"):
        store_key("anthropic", KEY, store="keyring")
    assert store_key("anthropic", KEY)[0] == "file"
    assert lookup_key("anthropic") == KEY


def test_file_store_is_honoured_with_a_keyring(memory: MemoryKeyring) -> None:
    assert store_key("openai", KEY, store="file")[0] == "file"
    assert memory.store == {}


# --- logout ------------------------------------------------------------------------------------


def test_logout_removes_from_everywhere_and_is_idempotent(memory: MemoryKeyring) -> None:
    store_key("anthropic", "file-key", store="file")
    memory.set_password(KEYRING_SERVICE, "anthropic", KEY)  # pyright: ignore[reportUnknownMemberType]  # keyring wraps set_password untyped
    store_key("openai", "other", store="file")
    assert remove_key("anthropic") == ["keyring", "file"]
    assert remove_key("anthropic") == []
    assert lookup_key("anthropic") is None
    assert lookup_key("openai") == "other"  # other providers untouched
    assert mode_of(credentials_path()) == 0o600


def test_logout_without_anything_stored() -> None:
    assert remove_key("anthropic") == []
    assert not credentials_path().exists()


# --- lookup order ------------------------------------------------------------------------------


def test_lookup_order_argument_env_keyring_file(
    memory: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_key("anthropic", "from-file", store="file")
    memory.set_password(KEYRING_SERVICE, "anthropic", "from-keyring")  # pyright: ignore[reportUnknownMemberType]  # keyring wraps set_password untyped
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert lookup_key("anthropic", explicit="from-arg") == "from-arg"
    assert lookup_key("anthropic") == "from-env"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "  ")  # blank counts as unset
    assert lookup_key("anthropic") == "from-keyring"
    memory.delete_password(KEYRING_SERVICE, "anthropic")
    assert lookup_key("anthropic") == "from-file"
    remove_key("anthropic")
    assert lookup_key("anthropic") is None


def test_api_key_env_replaces_the_default_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "openai-env")
    monkeypatch.setenv("WORK_KEY", "work-env")
    assert lookup_key("work", type_="openai", api_key_env="WORK_KEY") == "work-env"
    assert lookup_key("work", type_="openai") == "openai-env"
    found = find_key("work", type_="openai", api_key_env="WORK_KEY")
    assert found is not None and (found.source, found.detail) == ("env", "WORK_KEY")


def test_google_reads_gemini_then_google(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g")
    assert lookup_key("google") == "g"
    monkeypatch.setenv("GEMINI_API_KEY", "gem")
    assert lookup_key("google") == "gem"


# --- providers use the stored key --------------------------------------------------------------


def test_a_stored_key_resolves_the_provider_without_touching_the_environment() -> None:
    with pytest.raises(AuthError, match="tether login anthropic"):
        resolve_provider("anthropic/claude-sonnet-4-5")
    store_key("anthropic", KEY)
    store_key("openai", "sk-openai-stored-123456", store="file")
    p = resolve_provider("anthropic/claude-sonnet-4-5")
    assert isinstance(p, AnthropicProvider) and p._client.api_key == KEY  # pyright: ignore[reportPrivateUsage]
    o = resolve_provider("openai/gpt-4o")
    assert isinstance(o, OpenAIChatProvider) and o._client.api_key == "sk-openai-stored-123456"  # pyright: ignore[reportPrivateUsage]
    assert not any(v in os.environ for v in KEY_VARS)


def test_named_endpoints_from_settings(memory: MemoryKeyring) -> None:
    endpoints = {
        "work": ProviderSettings(type="openai", base_url="http://127.0.0.1:9/v1", model="m0"),
        "proxy": ProviderSettings(
            type="anthropic", base_url="http://127.0.0.1:9", api_key_env="WORK_KEY"
        ),
        "future": ProviderSettings(type="google"),
    }
    store_key("work", "work-key-from-keyring")
    store_key("proxy", "proxy-key-from-keyring")  # Anthropic needs a key at any endpoint
    p = resolve_provider("work", providers=endpoints)
    assert isinstance(p, OpenAIChatProvider) and (p.name, p.model) == ("work", "m0")
    assert str(p._client.base_url).startswith("http://127.0.0.1:9/v1")  # pyright: ignore[reportPrivateUsage]
    assert p._client.api_key == "work-key-from-keyring"  # pyright: ignore[reportPrivateUsage]
    q = resolve_provider("proxy/claude", providers=endpoints, base_url="http://127.0.0.1:8")
    assert isinstance(q, AnthropicProvider) and q.name == "proxy"
    assert str(q._client.base_url).startswith("http://127.0.0.1:8")  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(AuthError, match="tether login future"):
        resolve_provider("future/gemini-2.5-pro", providers=endpoints)
    store_key("future", "gemini-key-from-keyring")
    g = resolve_provider("future/gemini-2.5-pro", providers=endpoints)
    assert isinstance(g, GoogleProvider) and (g.name, g.model) == ("future", "gemini-2.5-pro")


def test_a_stored_then_exported_key_is_scrubbed_from_tool_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T31: a key that tether reads (login, then `export ANTHROPIC_API_KEY=...`) never reaches a
    tool subprocess, and does not appear in what the tool returns."""
    store_key("anthropic", KEY, store="file")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("TETHER_TEST_PLAIN", "visible")
    assert lookup_key("anthropic") == KEY
    scripted = ScriptedProvider([call("bash", command="env; echo done"), "ok"])
    agent = Agent(scripted, tools=builtin_tools(), root=tmp_path)
    assert "ANTHROPIC_API_KEY" not in agent.tool_context.env
    result = agent.run_sync("print the environment")
    outputs = [b for t in result.new_turns for b in t.content if isinstance(b, ToolResultBlock)]
    text = json.dumps([str(b.content) for b in outputs])
    assert "TETHER_TEST_PLAIN=visible" in text and "done" in text  # the command did run
    assert KEY not in text and "ANTHROPIC_API_KEY" not in text
