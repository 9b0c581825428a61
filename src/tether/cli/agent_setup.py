"""`tether run`'s flags as overrides of the one config (`tether.AgentConfig`).

Owns: which flag sets which config field (flags win over the settings files):
    --max-turns N        run.max_turns
    --safe               tools.safe
    --network            tools.network
    --no-compact         context.auto_compact = false
    --context-window N   context.window
    --max-budget-usd X   run.max_budget_usd   (set by `tether.cli.run`)
    --output-format F    run.output_format
    --effort LEVEL       run.effort            (`effort_override`)
    --add-dir PATH[:ro]  tools.add_dirs (added) (`add_dir_override`; absolute real paths)
`--model` / `--base-url` pin the model (`Agent.from_settings(model=..., base_url=...)`), and
`--system` (or a stdin system message) is the agent's system prompt.
Does not own: the rules that turn a config into an agent (`tether.agent.assembly.build`, used by
`tether.Agent` and `Agent.from_settings`), argument parsing (`tether.cli.main`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import ConfigError

if TYPE_CHECKING:
    from tether.tools.registry import ToolRegistry


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


def check_model(model: str, base_url: str | None, cwd: Path) -> None:
    """`--model` resolves in `cwd` as `tether run` resolves it (`tether chat` asks before its
    screen opens: a model that cannot be used is one line, not a dead session).

    Raises:
        ConfigError: an unknown provider, no model named, a missing extra or file.
        AuthError: no key for the provider.
    """
    from tether.agent.assembly import build

    build.settings_chain(cwd, model=model, base_url=base_url, overrides=None, note=lambda _: None)


def named_flag(exc: ConfigError, tools_flag: str | None) -> ConfigError:
    """`exc`, naming `--tools` where it names the setting the flag set (`tools.only`)."""
    text = str(exc)
    if tools_flag is None or type(exc) is not ConfigError or "in tools.only:" not in text:
        return exc
    return ConfigError(text.replace("in tools.only:", "in --tools:", 1))


def check_safe_tools(registry: ToolRegistry, only: Sequence[str] | None, safe: bool) -> None:
    """Refuse `--safe` with `--tools` naming a tool safe mode never runs (the trial's
    `--safe --tools bash` left the run no usable tool).

    Raises:
        ConfigError: one line naming those tools.
    """
    if not safe or only is None:
        return
    unsafe = [n for n in only if (tool := registry.get(n)) is not None and not tool.safe]
    if unsafe:
        raise ConfigError(
            f"--safe offers read-only tools only, and --tools names {', '.join(unsafe)}, which "
            "can modify files or run commands: drop --safe or those tools"
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


def effort_override(effort: str | None) -> dict[str, Any]:
    """`{"run.effort": level}` for `--effort LEVEL` (nothing when not given).

    Raises:
        ConfigError: not a level (one line naming the flag and the levels).
    """
    if effort is None:
        return {}
    from tether.effort import EFFORTS, parse_effort

    level = parse_effort(effort)
    if level is None:
        raise ConfigError(f"--effort {effort!r}: give one of {', '.join(EFFORTS)}")
    return {"run.effort": level}


def add_dir_override(entries: Sequence[str] | None, cwd: Path) -> dict[str, Any]:
    """`{"tools.add_dirs+": [...]}` for `--add-dir PATH[:ro]` (repeatable; nothing when not
    given): each folder as its real absolute path (relative ones from `cwd`), `:ro` kept,
    added to the settings' own `tools.add_dirs` (as Claude Code's `--add-dir` adds to
    `additionalDirectories`).

    Raises:
        ConfigError: a folder that does not exist, or one that holds tether's own folders
            (one line naming it).
    """
    if not entries:
        return {}
    from tether.sandbox.config import check_add_dir
    from tether.sandbox.policy import READ_ONLY_SUFFIX, parse_add_dir

    out: list[str] = []
    for entry in entries:
        path, writable = parse_add_dir(entry, cwd)
        why = check_add_dir(path)
        if why is not None:
            raise ConfigError(f"--add-dir {entry}: {why}")
        out.append(path if writable else path + READ_ONLY_SUFFIX)
    return {"tools.add_dirs+": out}
