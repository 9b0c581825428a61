"""The approval gate: whether a tool call may run, asked of the host before it runs.

Owns: the approval modes (`ApprovalMode`), which calls a mode asks about (`needs_approval`,
pure), the request the host sees (`ApprovalRequest`: the call, its kind, a diff for file
edits, the agent path), the host's answer (`ApprovalDecision`: allow once, allow this tool
for the rest of the session, or deny with a reason the model is told), and `ApprovalGate`,
which asks one question at a time and remembers session-wide allowances.
Does not own: safe mode (`tether.tools.safe_mode`; the `read-only` mode *is* safe mode, the agent
maps one onto the other), rendering the question (the host: the TUI's prompt, or a library
callback), the diff text (`tether.tools.preview`).

Modes (like Codex's approval policies and Claude Code's permission modes):
- `ask`: every call of a tool that is not `safe` (write, edit, bash, MCP tools, ...) is asked.
- `auto-edit`: file edits (`write`, `edit`) run; other non-safe calls are asked.
- `read-only`: safe mode: only `safe` tools are offered and run (nothing is asked).
- `auto`: everything runs (the OS sandbox still contains it).

With no approver attached (a headless `tether run`), nothing is asked: `ask` and `auto-edit`
behave as `auto`. A headless host that wants a gate passes `Agent(host=Host(approver=...))`.

Permission rules (`permissions` settings, `tether.permissions.rules`) come first, in every
mode: a `deny` match is refused (the rule named), an `allow` match runs unasked, an `ask`
match is asked even where the mode asks nothing (headless: refused, naming the rule to move
to `permissions.allow`). The `write` content trip-wire (`tether.permissions.content`) is a
built-in `ask` after the rules: a `write` whose content names an existing path outside the
project is asked in every mode, and refused headless (an `allow` rule for it lets it through).
The host's "always allow" answer (`ApprovalDecision.always`) adds
the rules it shows to the live rules; writing them to the settings file is the host's part.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from tether.errors import RuleError
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.permissions.content import tripwire_reason
from tether.permissions.rules import Decision, Rules, suggest

ApprovalMode = Literal["ask", "auto-edit", "read-only", "auto"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("ask", "auto-edit", "read-only", "auto")
CallKind = Literal["edit", "exec", "spawn", "other"]

EDIT_TOOLS = frozenset({"write", "edit"})
"""The built-in tools that change files and nothing else (allowed by `auto-edit`)."""
EXEC_TOOLS = frozenset({"bash"})
SPAWN_TOOLS = frozenset({"task"})


def call_kind(name: str) -> CallKind:
    """What a call of tool `name` does, for the host's prompt: `edit` (write/edit), `exec`
    (bash), `spawn` (a subagent), or `other`."""
    if name in EDIT_TOOLS:
        return "edit"
    if name in EXEC_TOOLS:
        return "exec"
    if name in SPAWN_TOOLS:
        return "spawn"
    return "other"


def needs_approval(mode: ApprovalMode, name: str, *, safe: bool) -> bool:
    """Whether `mode` asks before a call of tool `name` (`safe`: the tool is read-only).

    `read-only` asks nothing: safe mode refuses non-safe calls before the gate is reached."""
    if safe or mode in ("auto", "read-only"):
        return False
    if mode == "auto-edit":
        return name not in EDIT_TOOLS
    return True


@dataclass(frozen=True)
class ApprovalRequest:
    """One call awaiting the host's decision.

    Attributes:
        call: the tool call (name, parsed arguments, id).
        kind: `edit`, `exec`, `spawn` or `other` (see `call_kind`).
        diff: for `write` / `edit`, the unified diff the call would make (None when it cannot
            be computed, e.g. the file is unreadable: the call then fails on its own).
        agent_path: which agent asks (`("main",)`, `("main", "task:<call id>")`).
        suggested: the allow rules an "always allow" answer would add (`bash(pytest *)`).
        reason: why it is asked when a permission rule says so (else empty).
    """

    call: ToolCallBlock
    kind: CallKind
    diff: str | None = None
    agent_path: tuple[str, ...] = ("main",)
    suggested: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class ApprovalDecision:
    """The host's answer.

    Attributes:
        allow: run the call.
        remember: with `allow`, allow every later call of this tool in this agent's session
            without asking.
        reason: with a denial, what the model is told (e.g. "use a branch instead").
        rules: with `allow`, allow rules to add for good ("always allow"; the host writes them
            to the user settings).
    """

    allow: bool
    remember: bool = False
    reason: str = ""
    rules: tuple[str, ...] = ()

    @classmethod
    def always(cls, rules: tuple[str, ...]) -> ApprovalDecision:
        return cls(allow=True, rules=rules)

    @classmethod
    def once(cls) -> ApprovalDecision:
        return cls(allow=True)

    @classmethod
    def for_session(cls) -> ApprovalDecision:
        return cls(allow=True, remember=True)

    @classmethod
    def deny(cls, reason: str = "") -> ApprovalDecision:
        return cls(allow=False, reason=reason)


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
"""The host's callback: shown one request at a time (the gate serializes parallel calls)."""


def denied_result(call: ToolCallBlock, reason: str) -> ToolResultBlock:
    """The is_error result of a call the user did not allow (it was not run)."""
    said = reason.strip()
    if said and said[-1] not in ".!?":  # the user's words end a sentence before tether's
        said += "."
    why = f" Their reason: {said}" if said else ""
    text = (
        f"denied: the user did not allow this `{call.name}` call; it was not run.{why} "
        "Do not repeat the same call; adjust your approach or ask the user."
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)


def rule_denied_result(call: ToolCallBlock, decision: Decision) -> ToolResultBlock:
    """The is_error result of a call a `deny` permission rule refused (it was not run)."""
    text = (
        f"denied: this `{call.name}` call is {decision.reason}; it was not run. Do not repeat "
        "it; find another way or ask the user."
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)


def ask_refused_result(call: ToolCallBlock, decision: Decision) -> ToolResultBlock:
    """The is_error result of a call a permission rule wants asked, in a run that cannot ask
    anyone (headless): it names the rule to move to `permissions.allow`."""
    if decision.rule is not None:
        how = (
            f"the permission rule {decision.rule.text} (permissions.ask) asks before this call"
            f"{f' (`{decision.part}`)' if decision.part else ''} and no one can answer in this "
            f"run; to let such calls run unattended, move {decision.rule.text} to "
            "permissions.allow"
        )
    else:
        how = f"{decision.reason} and no one can answer in this run; write it as simpler commands"
    text = f"refused: {how}. It was not run."
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)


def tripwire_refused_result(call: ToolCallBlock, reason: str) -> ToolResultBlock:
    """The is_error result of a `write` the content trip-wire wants asked, in a run that cannot
    ask anyone (headless)."""
    text = (
        f"refused: {reason}, and no one can answer in this run to allow it. It was not run. "
        "Write the file without naming paths outside the project, or ask the user; a "
        "permission rule in permissions.allow (e.g. write(PATH)) lets such a write through."
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)


class ApprovalGate:
    """Asks the host about calls its mode does not let through, after the permission rules.

    Args:
        mode: the approval mode (`read-only` is applied as safe mode by the agent).
        approver: the host's callback; None: nothing is asked (headless).
        agent_path: this agent's path, put in each request.
        rules: the permission rules (default: none).
        root: the working folder (paths in rules are relative to it).
    """

    def __init__(
        self,
        mode: ApprovalMode,
        approver: Approver | None,
        *,
        agent_path: tuple[str, ...] = ("main",),
        rules: Rules | None = None,
        root: str = "",
    ) -> None:
        self.mode: ApprovalMode = mode
        self.approver = approver
        self.agent_path = agent_path
        self.rules = rules if rules is not None else Rules()
        self.root = root
        self.allowed_tools: set[str] = set()
        self._lock = asyncio.Lock()

    def asks(self, name: str, *, safe: bool) -> bool:
        """Whether a call of `name` would be put to the host now."""
        return (
            self.approver is not None
            and name not in self.allowed_tools
            and needs_approval(self.mode, name, safe=safe)
        )

    async def check(
        self, call: ToolCallBlock, *, safe: bool, diff: Callable[[], str | None] | None = None
    ) -> ToolResultBlock | None:
        """None when `call` may run, else its denial result. An approver that raises denies
        the call (its error is the reason); cancellation propagates.

        Args:
            call: the call.
            safe: whether the tool is read-only.
            diff: computes the edit preview, only when the host is actually asked.
        """
        ruled = self.rules.decide(call.name, call.arguments, self.root)
        if ruled.action == "deny":
            return rule_denied_result(call, ruled)
        if ruled.action == "allow":
            return None
        forced = ruled.action == "ask"
        if not forced and (trip := tripwire_reason(call.name, call.arguments, self.root)):
            if self.approver is None:
                return tripwire_refused_result(call, trip)
            forced, ruled = True, Decision(action="ask", reason=trip)
        if forced and self.approver is None:
            return ask_refused_result(call, ruled)
        if not forced and not self.asks(call.name, safe=safe):
            return None
        approver = self.approver
        assert approver is not None
        async with self._lock:  # one prompt at a time; a remembered answer may land meanwhile
            if not forced and call.name in self.allowed_tools:
                return None
            if not forced and self.rules.decide(call.name, call.arguments, self.root).action:
                return None  # an "always allow" answered meanwhile covers it
            request = ApprovalRequest(
                call=call,
                kind=call_kind(call.name),
                diff=diff() if diff is not None else None,
                agent_path=self.agent_path,
                suggested=suggest(call.name, call.arguments, ruled, self.root),
                reason=ruled.reason if forced else "",
            )
            try:
                decision = await approver(request)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a broken host callback denies, never crashes the run
                return denied_result(call, f"the approval prompt failed ({type(e).__name__}: {e})")
        if not decision.allow:
            return denied_result(call, decision.reason)
        if decision.remember:
            self.allowed_tools.add(call.name)
        for rule in decision.rules:
            with contextlib.suppress(RuleError):  # a host's bad rule is not the call's fault
                self.rules.add_allow(rule)
        return None
