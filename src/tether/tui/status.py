"""The TUI's footer: model · context gauge · usage and cost · mode · activity (the embedded
model loading, working, prompts queued) · the background shells running (`⧗ 2 shells`, only
when there are some; checked every second, as they end on their own).

Owns: `StatusBar` (the footer widget) and its context gauge, and `context_figure` (the one
context figure the footer and `/context` both show: the last request's pressure, else an estimate
of the view, as a share of the effective window).
Does not own: the pressure figures (`tether.compaction`), the gauge's text (`gauge_text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from tether.compaction.pressure import effective_window, estimate_tokens
from tether.plural import counted
from tether.providers.pricing import turns_usage_line
from tether.tui.commands import gauge_text

if TYPE_CHECKING:
    from tether.agent.agent import Agent


def context_figure(agent: Agent) -> tuple[int, int, bool] | None:
    """`(tokens, effective window, approximate)`: the context figure the footer's gauge and
    `/context`'s headline both show (one figure, one denominator). `tokens` is the last
    request's measured pressure, else an estimate of the current view; the effective window is
    the model's window minus the room kept for the reply (what compaction and the runaway
    guard measure against). None without a context monitor."""
    monitor = agent.context_monitor
    if monitor is None:
        return None
    if monitor.pressure is not None:
        p = monitor.pressure
        return p.tokens, p.effective_window, p.is_approximate
    window = effective_window(monitor.limits, monitor.policy)
    return estimate_tokens(agent.current_view()), max(window, 1), True


SHELLS_EVERY_S = 1.0
"""How often the footer checks the number of running background shells (s)."""


def running_shells(agent: Agent) -> int:
    """How many of the agent's background shells run now."""
    shells = agent.tool_context.shells
    return 0 if shells is None else len(shells.running())


class StatusBar(Static):
    """The footer: model · context gauge · usage and cost · safe / approval state · activity."""

    DEFAULT_CSS = "StatusBar { dock: bottom; height: 1; background: $panel; padding: 0 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._gauge: tuple[int, str, tuple[float | None, bool]] | None = None
        self._later = False
        self._last: tuple[Agent | None, bool, int, bool] = (None, False, 0, False)
        self._shells = 0

    def show(
        self, agent: Agent | None, *, busy: bool = False, queued: int = 0, loading: bool = False
    ) -> None:
        """Show `agent`'s state (None: no agent), `busy` working, `queued` steering prompts,
        `loading` the embedded model still loading."""
        self._last = (agent, busy, queued, loading)
        if agent is None:
            self.update("no agent")
            return
        ratio, approx = self._pressure(agent)
        usage = turns_usage_line(agent.history)
        mode = "PLAN" if agent.plan_mode else "SAFE" if agent.safe_mode else f"approval: {agent.approval_mode}"
        work = " · loading the model" if loading else ""
        work += " · working" if busy else ""
        waiting = f" · {queued} queued" if queued else ""
        model = f"{agent.provider.name}/{agent.provider.model}"
        if agent.parts.run.effort is not None:
            model += f" · effort {agent.parts.run.effort}"
        self._shells = running_shells(agent)
        shells = f" · ⧗ {counted(self._shells, 'shell')}" if self._shells else ""
        self.update(
            f"{model} · {gauge_text(ratio, approx)} · {usage} · {mode}{work}{waiting}{shells}"
        )

    def on_mount(self) -> None:
        self.set_interval(SHELLS_EVERY_S, self._shells_tick)

    def _shells_tick(self) -> None:
        """A background shell started or ended since the footer was drawn: draw it again
        (shells end on their own, with no event)."""
        agent = self._last[0]
        if agent is not None and running_shells(agent) != self._shells:
            self._again()

    def _again(self) -> None:
        agent, busy, queued, loading = self._last
        self.show(agent, busy=busy, queued=queued, loading=loading)

    def _pressure(self, agent: Agent) -> tuple[float | None, bool]:
        """The context gauge: the last request's pressure, else an estimate of the view
        (computed once per history: a 10,000-turn view takes ~0.1 s, so for a long history
        the first footer says `ctx –` and the figure follows after the first paint)."""
        monitor = agent.context_monitor
        if monitor is None:
            return None, True
        if monitor.pressure is not None:  # approximate: estimated, or a guessed window
            return monitor.pressure.ratio, monitor.pressure.is_approximate
        history = agent.history
        key = (len(history), history[-1].id if history else "")
        if self._gauge is None or self._gauge[:2] != key:
            if len(history) > 1000 and not self._later:  # after the first paint
                self._later = True
                self.call_after_refresh(self._again)
                return None, True
            self._later = False
            figure = context_figure(agent)
            ratio = None if figure is None else figure[0] / figure[1]
            self._gauge = (*key, (ratio, True))
        return self._gauge[2]
