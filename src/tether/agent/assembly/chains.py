"""Provider chains kept for reuse by a host that builds many agents in one process (a Jobs
worker builds one per task run).

Building a provider is the costly part of building an agent: each SDK client makes its own
HTTP client and TLS context (tens to hundreds of milliseconds of CPU), and the embedded model
loads its weights. A `ChainCache` resolves a chain once per distinct input and hands the same
provider objects to every later agent built with the same inputs.

What is shared is only what `tether.agent.assembly.build.resolve_models` returns: provider objects,
whose state is their client and connection pool (a request's state lives in its stream). An
agent's session, history, tools, hooks, compaction and budget are still built per agent
(`tether.agent.assembly.assemble.assemble`).

The key: the model argument, the base URL, the config's `providers` section and model
selection, the project's base URLs, and a digest of each entry's API key as
`tether.providers.registry.key_for` finds it now (so a key stored by `tether login` or
removed by `tether logout` builds a new chain). A provider object passed in is used as is.

Owns: the cache. Does not own: resolving (`tether.agent.assembly.build.resolve_models`), providers.

An SDK client's connection pool belongs to the event loop it first ran on: use one cache per
event loop (`tether.jobs.warm` keeps one per worker thread, each with its own loop).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from tether.agent.assembly.build import ModelLike, Note, model_refs, resolve_models
from tether.errors import ConfigError
from tether.providers.base import Provider
from tether.providers.fallback import ModelRef
from tether.providers.registry import key_for
from tether.settings import AgentConfig

__all__ = ["ChainCache"]


class ChainCache:
    """Resolved provider chains by their inputs (see the module docstring).

    Args:
        limit: chains kept at most; the least recently used one is dropped beyond it.
    """

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._chains: OrderedDict[str, tuple[tuple[Provider, ...], tuple[str, ...]]] = (
            OrderedDict()
        )

    @property
    def size(self) -> int:
        """Chains kept now."""
        return len(self._chains)

    def resolve(
        self,
        model: ModelLike | None,
        config: AgentConfig,
        *,
        base_url: str | None = None,
        note: Note = lambda _m: None,
        project_urls: Mapping[str, str] | None = None,
    ) -> tuple[Provider, ...]:
        """`tether.agent.assembly.build.resolve_models` (same arguments, same errors), the chain
        reused when one was resolved from the same inputs; the notes the first resolution
        gave are given again."""
        key = self._key(model, config, base_url, project_urls)
        if key is None:
            return resolve_models(
                model, config, base_url=base_url, note=note, project_urls=project_urls
            )
        found = self._chains.get(key)
        if found is not None:
            self._chains.move_to_end(key)
            chain, notes = found
            for line in notes:
                note(line)
            return chain
        said: list[str] = []

        def keep(line: str) -> None:
            said.append(line)
            note(line)

        chain = resolve_models(model, config, base_url=base_url, note=keep, project_urls=project_urls)
        self._chains[key] = (chain, tuple(said))
        while len(self._chains) > self.limit:
            self._chains.popitem(last=False)
        return chain

    @staticmethod
    def _key(
        model: ModelLike | None,
        config: AgentConfig,
        base_url: str | None,
        project_urls: Mapping[str, str] | None,
    ) -> str | None:
        """The cache key, or None when the chain is not cached (provider objects given, a
        selection that does not parse: `resolve_models` then says why)."""
        if model is None:
            try:
                refs = model_refs(config)
            except ConfigError:
                return None
        elif isinstance(model, str):
            refs = (ModelRef.parse(model),)
        elif isinstance(model, list | tuple) and all(isinstance(m, str) for m in model):
            refs = tuple(ModelRef.parse(str(m)) for m in model)
        else:
            return None
        try:
            keys = [key_for(r, providers=config.providers) for r in refs]
        except ConfigError:
            return None
        specs = [r.spec for r in refs]
        inputs: dict[str, Any] = {
            "model": specs if model is not None else None,
            "selection": specs,
            "base_url": base_url,
            "providers": {n: p.model_dump(mode="json") for n, p in config.providers.items()},
            "project_urls": dict(sorted((project_urls or {}).items())),
            "keys": [None if k is None else hashlib.sha256(k.encode()).hexdigest() for k in keys],
        }
        return json.dumps(inputs, sort_keys=True, default=str)
