"""The settings screen (`/settings`, F2): the effective config with where each value comes
from, and the session-level settings changed for this session or saved to the user file.

Owns: `SettingsScreen` (a form for `tether.tui.settings_view.SESSION_KEYS` over a table of
every effective setting: key, value, source), `live_values(agent)` (the agent's values of the
session keys now), `apply_session_values(agent, values)` (changing them on the agent, from the
next request on) and `save_user_values(values)` (the user settings file, through
`tether.settings.save_setting`: the code `tether config set` runs).
Does not own: the rows and sources (`tether.tui.settings_view`, pure), the schema
(`tether.settings.model`), the files (`tether.settings.files`).

Keys: Enter in a field or the Apply button = apply for this session; Ctrl+S or the Save button
= apply and save to the user settings file; Esc = leave without change. The screen dismisses
with a one-line note of what it did (None: nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Select, Static, Switch

from tether.agent.agent import Agent
from tether.agent.approval import APPROVAL_MODES
from tether.errors import ConfigError
from tether.settings import save_setting, settings_path
from tether.settings.trust import trusted_settings
from tether.tui.settings_view import (
    SESSION_KEYS,
    SettingRow,
    changed_values,
    flatten,
    setting_rows,
)


def live_values(agent: Agent) -> dict[str, Any]:
    """The agent's values of the `SESSION_KEYS` now (the model as `provider/model`)."""
    return {
        "model": f"{agent.provider.name}/{agent.provider.model}",
        "tools.approval": agent.approval_mode,
        "tools.safe": agent.safe_mode,
        "context.auto_compact": agent.compaction is not None,
        "run.max_turns": agent.max_turns,
    }


def apply_session_values(agent: Agent, values: Mapping[str, Any]) -> None:
    """Change the session keys in `values` on `agent`, from the next request on (`agent.config`
    stays the config the agent was built with: the screen calls a value that differs from it
    `session`). All are checked against the schema before any is applied.

    Raises:
        ConfigError: a value the schema rejects, a model that does not resolve, or safe mode
            turned off without an OS sandbox (then the earlier keys of `values` are applied).
    """
    agent.apply_settings(values)


def save_user_values(values: Mapping[str, Any]) -> Path | None:
    """Write `values` (dotted key → JSON value) to the user settings file, one
    `save_setting("user", …)` each (as `tether config set KEY VALUE`). Returns the path (None
    when `values` is empty).

    Raises:
        ConfigError: a value the schema rejects or a malformed existing file (left as it was).
    """
    path: Path | None = None
    for key, value in values.items():
        path = save_setting("user", key, value)
    return path


def _sources(
    agent: Agent,
) -> tuple[dict[str, Any] | None, list[tuple[Literal["user", "project"], dict[str, Any]]]]:
    """The config the settings files give and the files read (named), for `setting_rows`."""
    try:
        loaded, _ = trusted_settings(agent.root)
    except ConfigError:
        return None, []
    project = settings_path("project", agent.root)
    layers: list[tuple[Literal["user", "project"], dict[str, Any]]] = [
        ("project" if path == project else "user", layer)
        for path, layer in zip(loaded.sources, loaded.layers, strict=True)
    ]
    return loaded.settings.to_json(), layers


class SettingsScreen(ModalScreen[str | None]):
    """The effective settings and a form for the session-level ones."""

    DEFAULT_CSS = """
    SettingsScreen { align: center middle; }
    SettingsScreen > Vertical { width: 96%; height: 94%; border: thick $accent;
        background: $surface; padding: 0 1; }
    SettingsScreen .title { text-style: bold; }
    SettingsScreen .field { height: 3; }
    SettingsScreen .field Label { width: 24; padding: 1 1 0 0; }
    SettingsScreen .field Input { width: 40; }
    SettingsScreen .field Select { width: 40; }
    SettingsScreen .help { color: $text-muted; padding: 1 0 0 1; }
    SettingsScreen #buttons { height: 3; }
    SettingsScreen #error { color: $error; height: auto; }
    SettingsScreen #all { height: 1fr; }
    SettingsScreen .keys { color: $text-muted; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("escape", "cancel", "leave without change"),
        Binding("ctrl+s", "save", "apply and save", priority=True),
    ]

    def __init__(self, agent: Agent) -> None:
        super().__init__()
        self.agent = agent
        self.before = live_values(agent)
        self.files, self.file_layers = _sources(agent)

    def rows(self) -> tuple[SettingRow, ...]:
        """The table's rows for the agent as it is now."""
        config = self.agent.config.to_json()
        return setting_rows(
            config, files=self.files, layers=self.file_layers, live=live_values(self.agent)
        )

    def compose(self) -> ComposeResult:
        helps = dict(SESSION_KEYS)
        v = self.before
        with Vertical():
            yield Static(
                Text("settings · this session (Enter applies, Ctrl+S also saves to the user file)"),
                classes="title",
            )
            with Horizontal(classes="field"):
                yield Label("model")
                yield Input(str(v["model"]), id="model")
                yield Static(helps["model"], classes="help")
            with Horizontal(classes="field"):
                yield Label("tools.approval")
                yield Select(
                    [(m, m) for m in APPROVAL_MODES],
                    value=str(v["tools.approval"]),
                    allow_blank=False,
                    id="approval",
                )
                yield Static(helps["tools.approval"], classes="help")
            with Horizontal(classes="field"):
                yield Label("tools.safe")
                yield Switch(bool(v["tools.safe"]), animate=False, id="safe")
                yield Static(helps["tools.safe"], classes="help")
            with Horizontal(classes="field"):
                yield Label("context.auto_compact")
                yield Switch(bool(v["context.auto_compact"]), animate=False, id="auto_compact")
                yield Static(helps["context.auto_compact"], classes="help")
            with Horizontal(classes="field"):
                yield Label("run.max_turns")
                yield Input(str(v["run.max_turns"]), type="integer", id="max_turns")
                yield Static(helps["run.max_turns"], classes="help")
            with Horizontal(id="buttons"):
                yield Button("Apply", id="apply", variant="primary")
                yield Button("Save to user settings", id="save")
                yield Button("Cancel", id="cancel")
            yield Static("", id="error")
            yield Static(
                Text("effective settings (source: session / flag / project / user / default)"),
                classes="title",
            )
            yield DataTable(id="all", cursor_type="row", zebra_stripes=True)
            yield Static(
                Text(
                    "Tab next field · Enter apply · Ctrl+S apply and save · Esc leave without change"
                ),
                classes="keys",
            )

    def on_mount(self) -> None:
        table = cast(DataTable[str], self.query_one("#all", DataTable))
        table.add_columns("key", "source", "value")
        self._fill()
        self.query_one("#model", Input).focus()

    def _fill(self) -> None:
        table = cast(DataTable[str], self.query_one("#all", DataTable))
        table.clear()
        for row in self.rows():
            value = row.value if len(row.value) <= 70 else row.value[:69] + "…"
            table.add_row(row.key, row.source, value)

    def form_values(self) -> dict[str, Any]:
        """The form's values, keyed like `SESSION_KEYS`.

        Raises:
            ConfigError: `run.max_turns` is not a whole number.
        """
        turns = self.query_one("#max_turns", Input).value.strip()
        try:
            max_turns = int(turns)
        except ValueError:
            raise ConfigError(f"run.max_turns: {turns!r} is not a whole number") from None
        return {
            "model": self.query_one("#model", Input).value.strip(),
            "tools.approval": cast(Select[str], self.query_one("#approval", Select)).value,
            "tools.safe": self.query_one("#safe", Switch).value,
            "context.auto_compact": self.query_one("#auto_compact", Switch).value,
            "run.max_turns": max_turns,
        }

    def _apply(self) -> dict[str, Any] | None:
        """Apply the changed fields; None (and the error shown) when that failed."""
        try:
            values = self.form_values()
            changed = changed_values(self.before, values)
            if changed.get("tools.approval") == "read-only" or (
                "tools.safe" in changed and values["tools.approval"] == "read-only"
            ):
                changed.pop("tools.safe", None)  # read-only is safe mode: one switch
            apply_session_values(self.agent, changed)
        except ConfigError as exc:
            self.query_one("#error", Static).update(Text(str(exc)))
            self._fill()
            return None
        return values

    def action_apply(self) -> None:
        values = self._apply()
        if values is None:
            return
        changed = changed_values(self.before, live_values(self.agent))
        self.dismiss(f"settings for this session: {_describe(changed)}" if changed else None)

    def action_save(self) -> None:
        values = self._apply()
        if values is None:
            return
        flat = flatten(self.files or {})
        to_save = {k: v for k, v in values.items() if flat.get(k) != v}
        try:
            path = save_user_values(to_save)
        except ConfigError as exc:
            self.query_one("#error", Static).update(Text(f"not saved: {exc}"))
            return
        if path is None:
            self.dismiss("settings: nothing to save (the files already say so)")
            return
        self.dismiss(f"saved to {path}: {_describe(to_save)}")

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "apply":
            self.action_apply()
        elif event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()


def _describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in values.items())
