"""`tether run`'s flags as overrides of the one config (`tether.AgentConfig`).

Owns: which flag sets which config field (flags win over the settings files):
    --max-turns N        run.max_turns
    --safe               tools.safe
    --network            tools.network
    --no-compact         context.auto_compact = false
    --context-window N   context.window
    --max-budget-usd X   run.max_budget_usd   (set by `tether.cli.run`)
    --output-format F    run.output_format
`--model` / `--base-url` pin the model (`Agent.from_settings(model=..., base_url=...)`), and
`--system` (or a stdin system message) is the agent's system prompt.
Does not own: the rules that turn a config into an agent (`tether.agent.assembly.build`, used by
`tether.Agent` and `Agent.from_settings`), argument parsing (`tether.cli.main`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tether.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextOptions:
    """`tether run`'s context flags: `--no-compact`, `--context-window N` (tokens)."""

    enabled: bool = True
    context_window: int | None = None


def check_flags(model: str | None, base_url: str | None) -> None:
    """Reject a blank `--model` and a `--base-url` that is not an http(s) URL with a host.

    Raises:
        ConfigError: with one line naming the flag (a usage error, exit 1).
    """
    if model is not None and not model.strip():
        raise ConfigError("--model is empty: give provider/model, or leave it out")
    if base_url is not None:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(base_url.strip())
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
            _ = parts.port  # raises ValueError on a bad port
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(
                f"--base-url {base_url!r} is not a URL: give http(s)://host[:port][/path]"
            )


def flag_overrides(
    *,
    max_turns: int | None,
    safe: bool,
    network: bool,
    context: ContextOptions,
    output_format: str | None = None,
) -> dict[str, Any]:
    """The dotted config fields the given flags set (an unset flag sets nothing)."""
    out: dict[str, Any] = {}
    if max_turns is not None:
        out["run.max_turns"] = max_turns
    if safe:
        out["tools.safe"] = True
    if network:
        out["tools.network"] = True
    if not context.enabled:
        out["context.auto_compact"] = False
    if context.context_window is not None:
        out["context.window"] = context.context_window
    if output_format is not None:
        out["run.output_format"] = output_format
    return out
