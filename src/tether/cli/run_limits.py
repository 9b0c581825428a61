"""`tether run`'s `--output-schema` and `--max-tool-calls` (issue 39): the flags as settings,
the schema checked before anything is sent, and the stop line of a run they ended.

Owns: `overrides`, `check_schema`, `stop_reason_line`. Does not own: the per-run policies
(`tether.agent.turn.output_schema`, `tether.agent.turn.tool_limit`), the exit codes (`tether.cli.run`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.agent.turn.output_schema import load_schema, parse_answer
from tether.errors import ConfigError
from tether.plural import counted

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.turn.state import RunResult


def overrides(output_schema: str | None, max_tool_calls: int | None) -> dict[str, Any]:
    """`--output-schema` (a file's path, made absolute from the current folder, or the schema
    inline when it starts with `{`) and `--max-tool-calls` as settings; the schema is loaded
    here, so a bad one is refused before the settings' and the agent's notes.

    Raises:
        ConfigError: an inline schema that is not JSON, a schema that cannot be loaded.
    """
    out: dict[str, Any] = {}
    if max_tool_calls is not None:
        out["run.max_tool_calls"] = max_tool_calls
    if output_schema is None:
        return out
    if output_schema.lstrip().startswith("{"):
        try:
            out["run.output_schema"] = json.loads(output_schema)
        except ValueError as exc:
            raise ConfigError(f"--output-schema: the inline schema is not JSON ({exc})") from None
    else:
        out["run.output_schema"] = str(Path(output_schema).expanduser().resolve())
    load_schema(out["run.output_schema"], Path.cwd())  # before any setup line: one line alone
    return out


def check_schema(agent: Agent) -> None:
    """Load the run's schema once before anything is sent.

    Raises:
        ConfigError: it cannot be loaded (`tether.agent.turn.output_schema.load_schema`).
    """
    load_schema(agent.config.run.output_schema, agent.root)


def stop_reason_line(agent: Agent, result: RunResult) -> str | None:
    """Why a run ended on `schema_invalid` or `max_tool_calls` (exit 1; `tether.cli.run.stopped`
    makes it the `stopped: …` stderr line and the json result's `error`), else None."""
    run = agent.config.run
    if result.stop_reason == "max_tool_calls":  # the `warning` event says which call
        cap = run.max_tool_calls
        calls = f"{cap} calls" if cap is None else counted(cap, "call")
        return f"--max-tool-calls reached ({calls}) before a final answer"
    if result.stop_reason != "schema_invalid":
        return None
    _, why = parse_answer(result.text, load_schema(run.output_schema, agent.root) or {})
    return (
        "the final answer did not validate against --output-schema "
        f"({run.output_schema_retries} retries): {why}"
    )
