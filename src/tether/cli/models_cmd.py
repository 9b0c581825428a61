"""`tether models`: list the models of the known providers, or test one connection.

Owns: the `models` command (`--test NAME`: `tether.providers.compatible`; `--usage [NAME]`:
`tether.providers.plan_usage`).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from tether.cli.output import EXIT_USAGE, err
from tether.errors import ConfigError


def models(
    provider: Annotated[str | None, typer.Argument(help="openai, google, ollama, ...")] = None,
    base_url: Annotated[str | None, typer.Option(help="The provider's endpoint.")] = None,
    test: Annotated[
        str | None,
        typer.Option(
            "--test",
            help="Check the connection of providers.NAME (an openai-compatible or "
            "anthropic-compatible entry): one line, exit 0 when it answers.",
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

    from tether.providers.models import MODEL_PROVIDERS, list_all, listing_to_dict

    if test is not None:
        raise typer.Exit(test_command(test))
    if usage:
        raise typer.Exit(usage_command(provider))
    if base_url and not provider:
        err("--base-url needs a provider")
        raise typer.Exit(EXIT_USAGE)
    try:
        names = (provider,) if provider else MODEL_PROVIDERS
        listings = asyncio.run(list_all(names, base_url=base_url))
    except ConfigError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    for listing in listings:
        print(json.dumps(listing_to_dict(listing)))
        note = f" (the live listing failed: {listing.note})" if listing.note else ""
        err(f"{listing.provider}: {len(listing.models)} models from {listing.source}{note}")


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
        if endpoint is None or endpoint.type not in COMPATIBLE_TYPES:
            err(
                f"--test {name!r}: no providers.{name} entry of type "
                f"{' or '.join(COMPATIBLE_TYPES)} in the settings"
            )
            return EXIT_USAGE
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
