"""The settings screen's data (pure): the effective config as rows with where each value comes
from, and the session-level settings the screen can change.

Owns: `flatten` (a JSON object → dotted leaf keys), `setting_rows` (key, value, source),
`SESSION_KEYS` (what the screen changes for this session) and `changed_values`.
Does not own: reading the files (`tether.settings.load_settings`), writing them
(`tether.settings.save_setting`, the code `tether config set` uses), applying a value to the
agent (`tether.tui.settings_screen`).

Sources, in the order they are checked:
    session  the agent's live value differs from the config it was built with (changed by a
             command or this screen in this session, or a model pinned with `--model`)
    flag     the config differs from what the settings files give (a command-line flag)
    project  the project file (`<project>/.tether/settings.json`) sets the key
    user     the user file sets the key
    default  nothing sets it

No I/O, no clock; the inputs are never mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

Source = Literal["session", "flag", "project", "user", "default"]

SESSION_KEYS: tuple[tuple[str, str], ...] = (
    ("model", "provider/model of the next requests"),
    ("tools.approval", "when to ask before a tool call"),
    ("tools.safe", "safe mode: only read-only tools"),
    ("context.auto_compact", "compact automatically near the window's limit"),
    ("run.max_turns", "most requests one prompt may take"),
)
"""(dotted key, help) of the settings the screen changes for this session; the key is both the
JSON key and the `AgentConfig.with_values` name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SettingRow:
    """One effective setting: its dotted JSON key, its value as JSON text, its source."""

    key: str
    value: str
    source: Source


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"tools": {"safe": true}}` → `{"tools.safe": True}`: every leaf of nested objects by
    its dotted key (lists and empty objects are leaves)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(cast(Mapping[str, Any], value), dotted + "."))
        else:
            out[dotted] = value
    return out


def setting_rows(
    config: Mapping[str, Any],
    *,
    files: Mapping[str, Any] | None,
    layers: Sequence[tuple[Literal["user", "project"], Mapping[str, Any]]],
    live: Mapping[str, Any],
) -> tuple[SettingRow, ...]:
    """The rows of the settings screen, sorted by key.

    Args:
        config: the agent's config as JSON (`AgentConfig.to_json()`).
        files: the config the settings files alone give, as JSON (None: unknown, e.g. a file
            could not be read; then no row is called `flag`).
        layers: the raw files read, lowest precedence first, each named `user` or `project`.
        live: the agent's live values of (some of) the `SESSION_KEYS`.

    Returns:
        One row per leaf of `config`, plus any `live` key it lacks; values as compact JSON.
    """
    flat = flatten(config)
    base = flatten(files) if files is not None else None
    flat_layers: list[tuple[Source, dict[str, Any]]] = [(n, flatten(x)) for n, x in layers]
    keys = sorted({*flat, *live})
    rows: list[SettingRow] = []
    for key in keys:
        value = live.get(key, flat.get(key))
        source: Source = "default"
        if key in live and live[key] != flat.get(key):
            source = "session"
        elif base is not None and flat.get(key) != base.get(key):
            source = "flag"
        else:
            for name, layer in reversed(flat_layers):
                if key in layer:
                    source = name
                    break
        rows.append(SettingRow(key=key, value=json.dumps(value, ensure_ascii=False), source=source))
    return tuple(rows)


def changed_values(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `after` whose value differs from `before`'s (in `after`'s order)."""
    return {k: v for k, v in after.items() if before.get(k) != v}
