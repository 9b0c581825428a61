"""Fallback chains: one link (`ModelRef`), the provider-name rule, and which faults hand over.

Owns: `ModelRef` (a provider name and a model; `ModelRef.parse`, the one place a model string
is split), `check_provider_names` (unique, non-blank), and
the rule for which faults hand over to the next link (`falls_back`). Pure.
Does not own: the model-selection grammar (`tether.agent.assembly.build.model_refs`, the one reading of
the config's `model`), running attempts (`tether.agent.turn.attempts`), building provider instances
(`tether.providers.registry`), retries on one link (`tether.providers.retry`).

Fallback rule (after a pair's retries are spent, see `falls_back`): every fault kind hands over
to the next pair except `context_overflow` (the history is too long for any model: compaction's
job, not another provider's) and `cancelled` (the user's wish). `auth` does hand over: a quota,
billing or credential problem belongs to one provider's account, so the next provider may work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tether.errors import ConfigError
from tether.providers.base import StreamError


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRef:
    """One link of a fallback chain: a configured provider's name and a model it serves."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"

    @classmethod
    def parse(cls, spec: str | None) -> ModelRef:
        """The one reading of a model string (`tether.providers.registry`'s grammar):
        `provider/model` (the model is everything after the first `/`, its own slashes and
        tags kept), `provider` alone (model "": the provider's configured default), and
        None or "" for `local`. Strings are split here and nowhere else."""
        provider, _, model = (spec or "").strip().partition("/")
        return cls(provider=provider or "local", model=model)

    @property
    def spec(self) -> str:
        """`provider/model`, or `provider` alone for its configured default (as `--model`
        takes it)."""
        return f"{self.provider}/{self.model}" if self.model else self.provider


def check_provider_names(names: Sequence[str]) -> None:
    """Raise `ConfigError` unless every name is non-blank and unique."""
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            raise ConfigError("a configured provider has a blank name; give each provider a name")
        if name in seen:
            raise ConfigError(f"two configured providers are named {name!r}; names must be unique")
        seen.add(name)


def falls_back(event: StreamError) -> bool:
    """Whether the next pair of the chain takes over after `event` (module docstring rule)."""
    return event.kind not in ("context_overflow", "cancelled")
