"""`tether models`: list the models of the known providers, or test one connection.

Owns: the `models` command (`--test NAME`: `tether.providers.compatible`; `--usage [NAME]`:
`tether.providers.plan_usage`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer

from tether.cli.output import EXIT_USAGE, err
from tether.errors import AuthError, ConfigError

if TYPE_CHECKING:
    from tether.providers.models import ModelList
    from tether.settings.model import ProviderSettings


def models(
    provider: Annotated[str | None, typer.Argument(help="openai, google, ollama, ...")] = None,
    base_url: Annotated[str | None, typer.Option(help="The provider's endpoint.")] = None,
    test: Annotated[
        str | None,
        typer.Option(
            "--test",
            help="Check the connection of providers.NAME (any entry of the settings): one "
            "line, exit 0 when it answers.",
        ),
    ] = None,
    usage: Annotated[
        bool,
        typer.Option(
            "--usage",
            help="Show the plan usage (rate limits: requests, tokens left, when they reset) "
            "the provider's last replies stated, for PROVIDER or every provider seen.",
        ),
    ] = False,
) -> None:
    """List models, one JSON line per provider: live, else last cached listing, else bundled."""
    import asyncio
    from pathlib import Path

    from tether.cli.models_endpoints import list_endpoint
    from tether.providers.models import MODEL_PROVIDERS, list_all, listing_to_dict
    from tether.settings.files import load_config

    if test is not None:
        raise typer.Exit(test_command(test))
    if usage:
        raise typer.Exit(usage_command(provider))
    if base_url and not provider:
        err("--base-url needs a provider")
        raise typer.Exit(EXIT_USAGE)
    try:
        configured = load_config(Path.cwd()).providers
        if provider in configured and provider not in MODEL_PROVIDERS and base_url is None:
            listings = [asyncio.run(list_endpoint(provider, configured))]
        elif provider:
            if provider not in MODEL_PROVIDERS:
                known = [*MODEL_PROVIDERS, *(n for n in configured if n not in MODEL_PROVIDERS)]
                raise ConfigError(
                    f"unknown provider {provider!r}; use one of: {', '.join(known)}"
                )
            listings = asyncio.run(list_all((provider,), base_url=base_url))
        else:
            listings = asyncio.run(_every_listing(configured))
    except ConfigError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    for listing in listings:
        print(json.dumps(listing_to_dict(listing)))
        note = f" (the live listing failed: {listing.note})" if listing.note else ""
        err(f"{listing.provider}: {len(listing.models)} models from {listing.source}{note}")


async def _every_listing(configured: Mapping[str, ProviderSettings]) -> list[ModelList]:
    """The built-in providers' listings, then each settings entry's (one that cannot be listed,
    a missing key: a listing of its configured model with the reason)."""
    import asyncio

    from tether.cli.models_endpoints import list_endpoint
    from tether.providers.models import MODEL_PROVIDERS, list_all
    from tether.providers.models import ModelList as Listing

    async def entry(name: str) -> ModelList:
        try:
            return await list_endpoint(name, configured)
        except ConfigError as exc:
            own = configured[name].model
            return Listing(
                provider=name, models=(own,) if own else (), source="settings", note=str(exc)
            )

    names = [n for n in configured if n not in MODEL_PROVIDERS]
    builtin, entries = await asyncio.gather(
        list_all(MODEL_PROVIDERS), asyncio.gather(*(entry(n) for n in names))
    )
    return [*builtin, *entries]


def test_command(name: str) -> int:
    """`tether models --test NAME`: one line on stdout (`NAME: ok: …` or `NAME: failed (kind):
    …`); the exit code is 0, or the failure's (2 auth, 3 network, 4 provider, 1 usage)."""
    import asyncio
    from pathlib import Path

    from tether.errors import exit_code_for
    from tether.providers.compatible import (
        AnthropicCompatibleProvider,
        OpenAICompatibleProvider,
    )
    from tether.providers.registry import COMPATIBLE_TYPES, resolve_provider
    from tether.settings.files import load_config

    try:
        config = load_config(Path.cwd())
        endpoint = config.providers.get(name)
        if endpoint is None:
            err(f"--test {name!r}: no providers.{name} entry in the settings")
            return EXIT_USAGE
        if endpoint.type not in COMPATIBLE_TYPES:  # a built-in type at its own endpoint
            return _test_listing(name, config.providers)
        provider = resolve_provider(
            f"{name}/{endpoint.model or 'default'}", providers=config.providers
        )
    except ConfigError as exc:
        err(str(exc))
        return EXIT_USAGE
    assert isinstance(provider, OpenAICompatibleProvider | AnthropicCompatibleProvider)
    result = asyncio.run(provider.test_connection())
    took = f"in {result.ms:.0f} ms"
    if result.error is not None:
        print(f"{name}: failed ({result.error.kind}): {result.error.message} {took}")
        return exit_code_for(result.error.kind)
    if result.how == "models":
        shown = ", ".join(result.models[:5]) + (", …" if len(result.models) > 5 else "")
        print(f"{name}: ok: {len(result.models)} models ({shown}) {took}")
    else:
        print(f"{name}: ok: a one-token request answered (no model list) {took}")
    return 0


def _test_listing(name: str, configured: Mapping[str, ProviderSettings]) -> int:
    """`--test NAME` of an entry of a built-in type (`openai` with its own `base_url`): its
    model list, asked with its own key; the same one line as the compatible types'."""
    import asyncio
    import time

    from tether.cli.models_endpoints import endpoint_models
    from tether.errors import exit_code_for
    from tether.providers.errors import classify_exception

    start = time.perf_counter()
    try:
        found = asyncio.run(endpoint_models(name, configured[name], configured, 10.0))
    except ConfigError as exc:
        err(f"--test {name!r}: {exc}")
        return exit_code_for("auth") if isinstance(exc, AuthError) else EXIT_USAGE
    except Exception as exc:  # unreachable, refused: classified as a request's failure
        event = classify_exception(exc)
        took = f"in {(time.perf_counter() - start) * 1e3:.0f} ms"
        print(f"{name}: failed ({event.kind}): {event.message} {took}")
        return exit_code_for(event.kind)
    took = f"in {(time.perf_counter() - start) * 1e3:.0f} ms"
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    print(f"{name}: ok: {len(found)} models ({shown}) {took}")
    return 0


def usage_command(name: str | None) -> int:
    """`tether models --usage [NAME]`: the plan usage kept from the provider's last replies
    (`tether.providers.plan_usage`) on stdout; without NAME, every provider's that has one.
    A provider that cannot report it, or an unknown name, is one line on stderr and exit 1."""
    from pathlib import Path

    from tether.providers.models import default_cache_dir
    from tether.providers.plan_usage import (
        load_saved,
        not_supported,
        nothing_seen,
        usage_lines,
    )
    from tether.providers.registry import provider_class
    from tether.settings.files import load_config

    cache = default_cache_dir()
    if name is None:
        found = [
            u
            for f in sorted((cache / "plan-usage").glob("*.json"))
            if (u := load_saved(f.stem, cache)) is not None
        ]
        if not found:
            print(
                "no plan usage seen yet: it is read from the rate-limit headers of the "
                "providers' replies (run a request first)"
            )
        for seen in found:
            print("\n".join(usage_lines(seen)))
        return 0
    try:
        _, cls = provider_class(name, providers=load_config(Path.cwd()).providers)
    except ConfigError as exc:
        err(f"--usage: {exc}")
        return EXIT_USAGE
    if not callable(getattr(cls, "plan_usage", None)):
        err(not_supported(name))
        return EXIT_USAGE
    seen = load_saved(name, cache)
    print("\n".join(usage_lines(seen)) if seen is not None else nothing_seen(name))
    return 0
