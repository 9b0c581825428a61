"""Replaying a stored session offline against one target.

Owns: `replay_stored` (every request the session's assistant turns answered, rebuilt for the
target from the stored turns, tool results as stored), `replay_run` (the session re-run by a
real `Agent`: its stored assistant turns served by a scripted provider, its tool calls
re-executed in a scratch folder, each result compared with the stored one), `split_segments`,
and the report types. Every request is checked against the target's wire contract
(`tether.replay.contract`), every wire repair is reported.
Does not own: the contract (`tether.wire.contract`), the wire passes (`tether.wire`), reading
sessions and transcripts (`tether.session`), the scratch copy (the CLI makes it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tether.agent.events import AgentEvent, WireRepairEvent
from tether.agent.turn.continuation import CONTINUE_PROMPT
from tether.messages import ContentBlock, Target, ToolResultBlock, ToolSpec, Turn
from tether.providers.base import ModelRequest
from tether.replay.contract import Checker, checker
from tether.testing import Reply, Response, ScriptedProvider
from tether.wire import Repair, ViewBuilder

FindingKind = Literal["violation", "repair", "difference"]
_SHOWN = 300
"""Characters of a stored / re-run tool output quoted in a difference."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing a replay found.

    Attributes:
        kind: `violation` (the target would reject the request: its documented rule is
            quoted), `repair` (the wire view had to change the stored turns to send them), or
            `difference` (a re-executed tool call's result differs from the stored one).
        target: the target checked.
        request: the request's number in the replay (1-based), when it concerns one.
        detail: one line.
    """

    kind: FindingKind
    target: Target
    request: int | None
    detail: str

    def to_json(self) -> dict[str, str | int | None]:
        """The finding as a JSON object (`tether replay`'s output lines)."""
        return {
            "kind": self.kind,
            "target": self.target,
            "request": self.request,
            "detail": self.detail,
        }


@dataclass(slots=True, kw_only=True)
class ReplayReport:
    """What a replay to one target found.

    Attributes:
        target: the target.
        tools: `stored` (results served from the session) or `run` (re-executed).
        requests: requests built and checked.
        findings: violations, repairs and differences, in order.
    """

    target: Target
    tools: Literal["stored", "run"]
    requests: int = 0
    findings: list[Finding] = field(default_factory=lambda: [])

    def count(self, kind: FindingKind) -> int:
        """How many findings of `kind`."""
        return sum(1 for f in self.findings if f.kind == kind)

    def summary(self) -> str:
        """`anthropic (tools stored): 12 requests, 0 violations, 1 repair, 0 differences`."""

        def n(kind: FindingKind, word: str) -> str:
            k = self.count(kind)
            return f"{k} {word}{'' if k == 1 else 's'}"

        return (
            f"{self.target} (tools {self.tools}): {self.requests} request"
            f"{'' if self.requests == 1 else 's'}, "
            f"{n('violation', 'violation')}, {n('repair', 'repair')}, "
            f"{n('difference', 'difference')}"
        )


class _Repairs:
    """Collects repairs once each (the incremental view re-checks its open tail)."""

    def __init__(self, report: ReplayReport) -> None:
        self.report = report
        self.request: int | None = None
        self._seen: set[tuple[str, str, str | None]] = set()

    def __call__(self, repair: Repair) -> None:
        key = (repair.kind, repair.turn_id, repair.tool_call_id)
        if key not in self._seen:
            self._seen.add(key)
            self.report.findings.append(
                Finding(
                    kind="repair",
                    target=self.report.target,
                    request=self.request,
                    detail=f"{repair.kind}: {repair.message}",
                )
            )


def _check(chk: Checker, request: ModelRequest, n: int, report: ReplayReport) -> None:
    report.requests += 1
    for problem in chk.check(request):
        report.findings.append(
            Finding(kind="violation", target=chk.target, request=n, detail=problem)
        )


def tool_specs(turns: Sequence[Turn]) -> tuple[ToolSpec, ...]:
    """A spec per tool name the session calls (any object as arguments): what a foreign
    session offered, as far as its turns show."""
    names = dict.fromkeys(c.name for t in turns for c in t.tool_calls)
    return tuple(
        ToolSpec(name=n, description=f"The session's `{n}` tool.", parameters={"type": "object"})
        for n in names
    )


def _assistant_indexes(turns: Sequence[Turn]) -> list[int]:
    return [i for i, t in enumerate(turns) if t.role == "assistant"]


def replay_stored(
    turns: Sequence[Turn],
    target: Target,
    *,
    system: str | None = None,
    tools: tuple[ToolSpec, ...] | None = None,
    from_turn: int = 1,
) -> ReplayReport:
    """Rebuild, for `target`, the request that preceded each stored assistant turn (from the
    `from_turn`-th on, 1-based) as the agent loop builds it (an incremental `ViewBuilder`,
    `is_wire_view=True`), tool results as stored; check each against the target's contract.
    `turns` is not modified.

    Args:
        turns: the stored session.
        target: the wire target.
        system: the system prompt sent with each request.
        tools: the tools offered (default: one spec per tool name the session calls).
        from_turn: the first assistant turn whose request is checked (1-based).
    """
    chk = checker(target)
    report = ReplayReport(target=target, tools="stored")
    repairs = _Repairs(report)
    views = ViewBuilder(
        target,
        route=chk.route,
        vendor_endpoint=chk.vendor_endpoint,
        supports_prefill=chk.supports_prefill,
        on_repair=repairs,
    )
    specs = tool_specs(turns) if tools is None else tools
    history = tuple(turns)
    for n, i in enumerate(_assistant_indexes(history), start=1):
        if n < from_turn or i == 0:
            continue
        repairs.request = n
        view = views.view(history[:i])
        request = ModelRequest(
            model=chk.route.model, messages=view, system=system, tools=specs, is_wire_view=True
        )
        _check(chk, request, n, report)
    return report


Segment = tuple[tuple[ContentBlock, ...] | None, list[Turn]]
"""A user prompt (None: continue the history) and the stored assistant turns answering it."""


def split_segments(turns: Sequence[Turn]) -> list[Segment]:
    """The stored turns as agent runs: each user prompt and the assistant turns up to the
    next one. User turns the agent writes itself (tool results, "Please continue.") and
    system turns start no run; prompts with no reply in between are joined."""
    segments: list[Segment] = []
    prompt: tuple[ContentBlock, ...] | None = None
    replies: list[Turn] = []
    for t in turns:
        if t.role == "assistant":
            replies.append(t)
        elif t.role == "user" and not t.tool_results and t.text.strip() != CONTINUE_PROMPT:
            if replies:
                segments.append((prompt, replies))
                prompt, replies = None, []
            prompt = (*(prompt or ()), *t.content)
    if replies:
        segments.append((prompt, replies))
    return segments


def _reply(turn: Turn) -> Reply:
    """A stored assistant turn as a scripted reply (a partial turn, `interrupted` or `error`,
    is served as a complete one)."""
    stop = turn.stop_reason
    served = None if stop in (None, "interrupted", "error") else stop
    return Reply(blocks=turn.content, stop_reason=served, usage=turn.usage)


def _text(block: ToolResultBlock) -> str:
    return block.text.strip()


def _differences(
    stored: dict[str, ToolResultBlock],
    rerun: dict[str, ToolResultBlock],
    names: dict[str, str],
    scratch: Path,
    cwd: str,
    target: Target,
) -> list[Finding]:
    found: list[Finding] = []
    for call_id, name in names.items():
        before = stored.get(call_id)
        after = rerun.get(call_id)
        if before is None:
            continue  # never answered in the stored session: nothing to compare
        if after is None:
            detail = f"call {call_id} ({name}) was not re-run"
        else:
            now = _text(after).replace(str(scratch), cwd)
            was = _text(before)
            if now == was and after.is_error == before.is_error:
                continue
            detail = (
                f"call {call_id} ({name}): stored {was[:_SHOWN]!r}"
                f"{' (error)' if before.is_error else ''}; re-run {now[:_SHOWN]!r}"
                f"{' (error)' if after.is_error else ''}"
            )
        found.append(Finding(kind="difference", target=target, request=None, detail=detail))
    return found


async def replay_run(
    turns: Sequence[Turn],
    target: Target,
    *,
    scratch: Path,
    cwd: str,
    from_turn: int = 1,
    system: str | None = None,
) -> ReplayReport:
    """Re-run the session from its `from_turn`-th assistant turn (1-based) with a real
    `Agent` (built-in tools, no compaction, one attempt per request) over `scratch` (a copy of
    the session's folder `cwd`): each stored assistant turn is served in order by a scripted
    provider for `target`, each request it receives is checked against the target's contract,
    each re-executed tool result is compared with the stored one (paths under `scratch` read
    as under `cwd`). `turns` is not modified.
    """
    from tether.agent.agent import Agent
    from tether.agent.host import Host
    from tether.agent.sessions import AgentSession
    from tether.settings import AgentConfig
    from tether.tools.builtin.toolset import builtin_tools

    chk = checker(target)
    report = ReplayReport(target=target, tools="run")
    history = tuple(turns)
    starts = _assistant_indexes(history)
    if from_turn > len(starts):
        return report
    start = starts[from_turn - 1]
    queue: deque[Turn] = deque()

    def serve(request: ModelRequest) -> Response:
        _check(chk, request, report.requests + 1, report)
        return _reply(queue.popleft())

    def on_event(event: AgentEvent) -> None:  # the agent reports each repair once
        if isinstance(event, WireRepairEvent):
            report.findings.append(
                Finding(
                    kind="repair",
                    target=target,
                    request=report.requests or None,
                    detail=f"{event.kind}: {event.detail}",
                )
            )

    provider = ScriptedProvider(
        serve, target=target, model=chk.route.model, name=chk.route.provider
    )
    agent = Agent(
        provider,
        config=AgentConfig().with_values({"retry.max_attempts": 1}),
        tools=builtin_tools(),
        system=system,
        root=scratch,
        host=Host(on_event=on_event),
        session=AgentSession(history=history[:start]),
        compaction=False,
    )
    for prompt, replies in split_segments(history[start:]):
        queue.extend(replies)
        await agent.run(prompt, max_turns=len(replies))
        if queue:
            report.findings.append(
                Finding(
                    kind="difference",
                    target=target,
                    request=report.requests,
                    detail=f"the re-run stopped with {len(queue)} stored replies unused",
                )
            )
            queue.clear()
    replayed = history[start:]
    names = {c.id: c.name for t in replayed for c in t.tool_calls}
    stored = {r.tool_call_id: r for t in replayed for r in t.tool_results}
    rerun = {r.tool_call_id: r for t in agent.history[start:] for r in t.tool_results}
    report.findings += _differences(stored, rerun, names, scratch, cwd, target)
    return report
