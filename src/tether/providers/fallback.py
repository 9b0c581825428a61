"""Fallback chains: a run's model selection as an ordered list of (provider, model) pairs.

Owns: resolving a model selection against the configured providers (`resolve_chain`), the rule
for which faults hand over to the next pair (`falls_back`), and binding a provider instance to
another model (`bind_model`). Pure except `bind_model`'s wrapper, which only delegates.
Does not own: running attempts (`tether.agent.attempts`), building provider instances from
settings (the caller passes them), retries on one pair (`tether.providers.retry`).

Selection grammar (resolved once, at start; a mistake is a `ConfigError` then, never mid-run):
    None                     each configured provider's default model, in configuration order
    "MODEL"                  that model on every configured provider, in order
    [item, ...]              in order; item = "MODEL" (on every provider) or
                             {"provider": NAME, "model"?: MODEL} (pinned to one provider; no
                             model = its default)
The chain is de-duplicated (first occurrence wins). Provider names must be unique and non-blank.

Fallback rule (after a pair's retries are spent, see `falls_back`): every fault kind hands over
to the next pair except `context_overflow` (the history is too long for any model: compaction's
job, not another provider's) and `cancelled` (the user's wish). `auth` does hand over: a quota,
billing or credential problem belongs to one provider's account, so the next provider may work.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

from tether.errors import ConfigError
from tether.messages import Target
from tether.providers.base import ModelRequest, Provider, StreamError, StreamEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRef:
    """One link of a fallback chain: a configured provider's name and a model it serves."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


Selection = str | Sequence[str | Mapping[str, str]] | None
"""A run's model selection (grammar in the module docstring)."""


def check_provider_names(names: Sequence[str]) -> None:
    """Raise `ConfigError` unless every name is non-blank and unique."""
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            raise ConfigError("a configured provider has a blank name; give each provider a name")
        if name in seen:
            raise ConfigError(f"two configured providers are named {name!r}; names must be unique")
        seen.add(name)


def _item_refs(item: object, defaults: Mapping[str, str]) -> list[ModelRef]:
    if isinstance(item, str):
        if not item.strip():
            raise ConfigError("a blank model name in the model selection")
        return [ModelRef(provider=p, model=item) for p in defaults]
    if isinstance(item, Mapping):
        entry = cast(Mapping[str, object], item)
        unknown = set(entry) - {"provider", "model"}
        if unknown:
            raise ConfigError(
                f"unknown key(s) {sorted(unknown)} in model selection entry {dict(entry)!r}; "
                "use {provider, model}"
            )
        name = entry.get("provider")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"model selection entry {dict(entry)!r} names no provider")
        if name not in defaults:
            known = ", ".join(defaults) or "none"
            raise ConfigError(
                f"unknown provider {name!r} in the model selection (configured: {known})"
            )
        model = entry.get("model", defaults[name])
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"model selection entry {dict(entry)!r} has a blank model")
        return [ModelRef(provider=name, model=model)]
    raise ConfigError(
        f"a model selection entry must be a model name or {{provider, model}}: {item!r}"
    )


def resolve_chain(
    selection: Selection, providers: Sequence[tuple[str, str]] | Mapping[str, str]
) -> tuple[ModelRef, ...]:
    """Resolve a model selection to an ordered, de-duplicated chain.

    Args:
        selection: see the module docstring.
        providers: the configured providers in order, as (name, default model) pairs or an
            ordered mapping name → default model.

    Returns:
        At least one `ModelRef`.

    Raises:
        ConfigError: no provider configured, blank or duplicate provider names, an unknown
            provider, a blank model, a malformed entry, or an empty selection list.
    """
    pairs = list(providers.items()) if isinstance(providers, Mapping) else list(providers)
    check_provider_names([name for name, _ in pairs])
    if not pairs:
        raise ConfigError("no provider is configured")
    defaults = dict(pairs)
    refs: list[ModelRef] = []
    if selection is None:
        refs = [ModelRef(provider=n, model=m) for n, m in pairs]
    elif isinstance(selection, str):
        refs = _item_refs(selection, defaults)
    else:
        if not selection:
            raise ConfigError("the model selection list is empty")
        for item in selection:
            refs += _item_refs(item, defaults)
    return tuple(dict.fromkeys(refs))


def falls_back(event: StreamError) -> bool:
    """Whether the next pair of the chain takes over after `event` (module docstring rule)."""
    return event.kind not in ("context_overflow", "cancelled")


class BoundProvider:
    """`provider` answering as `model`: each request's `model` is replaced by it.

    The provider name, target and prefill capability are the wrapped provider's.
    """

    def __init__(self, provider: Provider, model: str) -> None:
        self.inner = provider
        self.name = provider.name
        self.target: Target = provider.target
        self.model = model
        self.supports_prefill = bool(getattr(provider, "supports_prefill", False))

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Delegate with `request.model` set to this binding's model."""
        return self.inner.stream(replace(request, model=self.model))


def bind_model(provider: Provider, model: str) -> Provider:
    """`provider` itself when it already defaults to `model`, else a `BoundProvider`."""
    return provider if provider.model == model else BoundProvider(provider, model)


def build_chain(
    refs: Sequence[ModelRef], providers: Mapping[str, Provider]
) -> tuple[Provider, ...]:
    """Provider instances for a resolved chain (one instance per provider name, re-bound per
    model).

    Raises:
        ConfigError: a ref names a provider missing from `providers`.
    """
    out: list[Provider] = []
    for ref in refs:
        provider = providers.get(ref.provider)
        if provider is None:
            raise ConfigError(f"no provider instance named {ref.provider!r}")
        out.append(bind_model(provider, ref.model))
    return tuple(out)
