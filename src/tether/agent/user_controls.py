"""What a user changes on a live agent beside the model and the modes: the reasoning effort
(`--effort`, `/effort`, `agent.apply_settings({"run.effort": "high"})`), kept in the session
so a resume keeps it.

Owns: recording the effort in the session (`adopt`, `record`: an `effort` event when it
changes), the one line for a model without reasoning (`say`), `set_effort` (the TUI's
`/effort`), `with_stored_effort` (a resumed session's effort as an override).
Does not own: the mapping of a level per provider (`tether.providers.effort`), the setting
(`run.effort`), the session's events (`tether.agent.sessions`), the `Agent` facade.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from tether.agent.sessions import EFFORT_EVENT, AgentSession, stored_effort
from tether.providers.catalog import effort_note
from tether.providers.effort import Effort

if TYPE_CHECKING:
    from tether.agent.parts import AgentParts
    from tether.providers.base import Provider


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


def record(agent: Controlled, values: Mapping[str, Any]) -> None:
    """After `apply_settings(values)`: an `effort` event when they set `run.effort`."""
    if "run.effort" in values:
        agent.session.record_event(EFFORT_EVENT, {"effort": effort_of(agent)})


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
