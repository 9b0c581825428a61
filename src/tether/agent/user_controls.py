"""What a user changes on a live agent beside the model and the modes: the reasoning effort
(`--effort`, `/effort`, `agent.apply_settings({"run.effort": "high"})`), kept in the session
so a resume keeps it, and the extra folders (`--add-dir`, `/add-dir`,
`agent.apply_settings({"tools.add_dirs": [...]})`).

Owns: recording the effort in the session (`adopt`, `applied`: an `effort` event when it
changes), the one line for a model without reasoning (`say`), `set_effort` (the TUI's
`/effort`), `with_stored_effort` (a resumed session's effort as an override), the extra
folders applied mid-session (`applied`, `add_dir`: each checked, `checked_add_dir`).
Does not own: the mapping of a level per provider (`tether.effort`), the setting
(`run.effort`), the session's events (`tether.agent.sessions`), the `Agent` facade.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tether.agent.assembly.parts import with_add_dirs
from tether.agent.sessions import EFFORT_EVENT, AgentSession, stored_effort, stored_model
from tether.effort import Effort
from tether.errors import ConfigError
from tether.providers.catalog import effort_note
from tether.sandbox.config import check_add_dir
from tether.sandbox.policy import READ_ONLY_SUFFIX, parse_add_dir

if TYPE_CHECKING:
    from tether.agent.assembly.build import ModelLike, Resolver
    from tether.agent.assembly.parts import AgentParts
    from tether.providers.base import Provider
    from tether.settings import AgentConfig
    from tether.tools.base import Tool


class Controlled(Protocol):
    """What these functions use of an agent (`tether.Agent` has it)."""

    @property
    def parts(self) -> AgentParts: ...
    @property
    def session(self) -> AgentSession: ...
    @property
    def provider(self) -> Provider: ...
    def apply_settings(self, values: Mapping[str, Any]) -> None: ...
    def _note(self, line: str) -> None: ...


def effort_of(agent: Controlled) -> Effort | None:
    """The reasoning effort sent with each request (`run.effort`), or None for the
    provider's own setting."""
    return agent.parts.run.effort


def adopt(agent: Controlled) -> None:
    """At construction: record the effort when it differs from the one the session stored
    (a new session with one set, a flag changing it), and `say` it."""
    session = agent.session
    stored = stored_effort(session.loaded.events)[1] if session.loaded is not None else None
    if effort_of(agent) != stored:
        session.record_event(EFFORT_EVENT, {"effort": effort_of(agent)})
    say(agent, agent._note)  # pyright: ignore[reportPrivateUsage]


def applied(parts: AgentParts, session: AgentSession, values: Mapping[str, Any]) -> AgentParts:
    """After `Agent.apply_settings(values)`: an `effort` event when they set `run.effort`;
    `parts` with the extra folders when they set `tools.add_dirs`.

    Raises:
        ConfigError: an extra folder that is no folder or holds tether's own folders.
    """
    if "run.effort" in values:
        session.record_event(EFFORT_EVENT, {"effort": parts.run.effort})
    if "tools.add_dirs" in values:
        entries = [checked_add_dir(str(e), parts.root) for e in values["tools.add_dirs"]]
        parts = with_add_dirs(parts, entries)
    return parts


def checked_add_dir(entry: str, base: Path) -> str:
    """`PATH[:ro]` as its real path (relative ones from `base`), `:ro` kept.

    Raises:
        ConfigError: not a folder, or one holding tether's own folders.
    """
    path, writable = parse_add_dir(entry, base)
    why = check_add_dir(path)
    if why is not None:
        raise ConfigError(why)
    return path if writable else path + READ_ONLY_SUFFIX


def add_dir(agent: Controlled, entry: str) -> str:
    """`/add-dir PATH[:ro]`: one more extra folder from the next call on; returns its real
    path (`:ro` kept).

    Raises:
        ConfigError: not a folder, or one holding tether's own folders.
    """
    checked = checked_add_dir(entry, agent.parts.root)
    agent.apply_settings({"tools.add_dirs": [*agent.parts.config.tools.add_dirs, checked]})
    return checked


def say(agent: Controlled, note: Callable[[str], None]) -> str | None:
    """The one line when an effort is set and the model does not reason (given to `note`),
    else None."""
    line = effort_note(agent.provider.model, effort_of(agent))
    if line is not None:
        note(line)
    return line


def set_effort(agent: Controlled, effort: Effort | None) -> str | None:
    """Set the reasoning effort from the next request on (kept in the session); returns the
    line when the model does not reason, else None.

    Raises:
        ConfigError: not a level.
    """
    agent.apply_settings({"run.effort": effort})
    return effort_note(agent.provider.model, effort)


def with_stored_effort(
    overrides: Mapping[str, Any] | None, session: AgentSession | None
) -> Mapping[str, Any] | None:
    """`overrides` plus `run.effort` from a resumed session's last `effort` event, unless the
    overrides (a flag) set it: a resume keeps the effort it ran with."""
    if session is None or session.loaded is None or "run.effort" in (overrides or {}):
        return overrides
    found, level = stored_effort(session.loaded.events)
    return {**(overrides or {}), "run.effort": level} if found else overrides


def from_settings_files(
    cwd: Path | str,
    *,
    model: ModelLike | None,
    base_url: str | None,
    overrides: Mapping[str, Any] | None,
    note: Callable[[str], None],
    resolve: Resolver | None,
    session: AgentSession | None,
) -> tuple[Path, AgentConfig, tuple[Provider, ...], list[Tool], str | None]:
    """`build.from_settings_files`, on the model the resumed `session` last switched to (its
    `/model`, `stored_model`) when no `--model` / `--base-url` pins one; a stored model that
    no longer resolves falls back to the settings' with a note.

    Raises:
        ConfigError: as `build.from_settings_files`.
    """
    from tether.agent.assembly import build

    switched = None
    if model is None and base_url is None and session is not None and session.loaded:
        switched = stored_model(session.loaded.events)
    try:
        return build.from_settings_files(
            cwd, model=model or switched, base_url=base_url, overrides=overrides, note=note,
            resolve=resolve,
        )
    except ConfigError as exc:
        if switched is None:
            raise
        note(f"note: the session's model {switched} cannot be used ({exc}); the settings' is")
        return build.from_settings_files(
            cwd, model=None, base_url=None, overrides=overrides, note=note, resolve=resolve
        )
