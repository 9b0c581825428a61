"""`tether models`: list the models of the known providers, or test one connection.

Owns: the `models` command (`--test NAME`: `tether.providers.connection`).
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
) -> None:
    """List models, one JSON line per provider: live, else last cached listing, else bundled."""
    import asyncio

    from tether.providers.models import MODEL_PROVIDERS, list_all, listing_to_dict

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
        note = f" ({listing.note})" if listing.note else ""
        err(f"{listing.provider}: {len(listing.models)} models from {listing.source}{note}")
