"""Logging in to a provider: the optional `login` hook of a provider class (the seed's
`login()`), and the default every class without one gets.

Owns: `LoginIO` (how a flow talks to the user), `default_login` (ask for the API key: what the
OpenAI-compatible default does), `login_provider` (run a class's hook, else the default, and
keep what it returns in tether's credential store under the provider's name, where
`tether run` finds it: `tether.credentials.lookup_key`).
Does not own: the store (`tether.credentials`), the command (`tether login`, `tether.cli`).

A provider class declares a login flow with a static or class method

    @staticmethod
    def login(name: str, io: LoginIO) -> str | None     (or an async one)

returning the credential to store (a key, a token its endpoint issued), or None when there is
nothing to store (it says why through `io.say`: Ollama and the embedded model take no key). A
class without it gets `default_login`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol, cast

from tether.credentials import Store, store_key
from tether.errors import ConfigError

LoginHook = Callable[[str, "LoginIO"], "str | Awaitable[str | None] | None"]


class LoginIO(Protocol):
    """The user, as a login flow sees them."""

    def ask(self, prompt: str, *, secret: bool = True) -> str:
        """One answer (`secret`: not echoed). Raises ConfigError when no one can answer."""
        ...

    def say(self, line: str) -> None:
        """One line for the user (stderr in the CLI)."""
        ...


@dataclass(frozen=True, slots=True)
class LoginOutcome:
    """What a login left: where the credential went (`keyring` / `file` and its place), or
    None for both when the flow had nothing to store."""

    where: Literal["keyring", "file"] | None = None
    place: str | None = None


def default_login(name: str, io: LoginIO) -> str:
    """The default flow: ask for the provider's API key."""
    return io.ask(f"{name} API key", secret=True)


def login_hook(cls: type) -> LoginHook | None:
    """The class's own `login` flow, or None (it gets `default_login`)."""
    hook = getattr(cls, "login", None)
    return cast(LoginHook, hook) if callable(hook) else None


async def login_provider(
    cls: type | None, name: str, io: LoginIO, *, store: Store = "auto"
) -> LoginOutcome:
    """Run `cls`'s login flow (`default_login` when it declares none, or when `cls` is None: a
    name no adapter is known for yet) and keep its credential for `name`.

    Raises:
        ConfigError: the flow failed or was given nothing, or the store refused it.
    """
    hook = login_hook(cls) if cls is not None else None
    result = hook(name, io) if hook is not None else default_login(name, io)
    credential = cast(object, await result if inspect.isawaitable(result) else result)
    if credential is None:
        return LoginOutcome()
    if not isinstance(credential, str):  # a library hook's mistake, said plainly
        raise ConfigError(f"{name}: the login flow returned no credential")
    where, place = store_key(name, credential, store=store)
    return LoginOutcome(where, place)
