"""What the host of an agent gives it: one value for its callbacks.

Owns: `Host` — where events go, who answers approval requests and the `question` tool, and
where one-line setup notes go, and which agent of the tree this is. `tether run` passes its JSONL event writer; the TUI its
transcript, approval dialog and question overlay; a library user what they like (or nothing).
Does not own: the agent's configuration (`tether.AgentConfig`), its session
(`tether.agent.sessions.AgentSession`), library hooks that gate the loop (`tether.Hooks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tether.agent.approval import Approver
from tether.agent.events import AgentEvent
from tether.tools.context import LspHook, QuestionBridge

__all__ = ["Host"]


def _ignore(_value: object) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """The host's side of an agent. Every field is optional: an empty `Host()` is a headless
    library run that shows nothing and asks nothing.

    Attributes:
        on_event: called synchronously with every `AgentEvent`, in order, from the event loop
            that runs the agent. It must not raise and should return quickly (queue slow work).
        approver: awaited with an `ApprovalRequest` before a call `tools.approval` does not let
            through (`tether.agent.approval`); returns an `ApprovalDecision`. None: nothing
            is asked (headless: `ask` behaves as `auto`).
        questions: how the `question` tool reaches the user (`tether.tools.builtin.question`); None:
            the tool answers that no user is there.
        note: called synchronously with one-line setup notes (a fallback entry skipped, an
            unknown context window, a project base URL); None: they are kept in
            `Agent.notes` only.
        agent_path: the agent's place in the tree, as its host names it: `("main",)`, or a
            subagent's (`tether.agent.subagents` builds those); in approval requests, hook
            inputs and forwarded events.
        lsp: language servers to use instead of the agent's own, which the agent then does not
            stop (a subagent's: its caller's, `tether.lsp`); None: its own.
    """

    on_event: Callable[[AgentEvent], None] | None = None
    approver: Approver | None = None
    questions: QuestionBridge | None = None
    note: Callable[[str], None] | None = None
    agent_path: tuple[str, ...] = ("main",)
    lsp: LspHook | None = None

    def emit(self, event: AgentEvent) -> None:
        """Send `event` to `on_event` (nothing when there is none)."""
        (self.on_event or _ignore)(event)
