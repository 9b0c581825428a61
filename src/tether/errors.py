"""tether's exception hierarchy. Inside a run, provider and tool failures are values (an
`StreamError`, an `is_error` tool_result); exceptions are for configuration mistakes, corrupt
sessions, failed runs reported to a caller, and bugs.

    TetherError
    ├── ConfigError                 bad settings, unknown provider/model, missing extra
    │   ├── AuthError               no credentials for a provider that needs them
    │   ├── DurationError           a duration that does not parse (`tether.durations`)
    │   ├── ToolConflictError       two tools with one name (`tether.tools.scan`)
    │   ├── RuleError               a permission rule that does not parse
    │   │                           (`tether.permissions.rules`)
    │   ├── SandboxUnavailableError a forced OS sandbox does not work here
    │   │                           (`tether.sandbox.detect`)
    │   └── TracingUnavailableError tracing was enabled, the `tracing` extra is missing
    │                               (`tether.tracing`)
    ├── SessionError                a session cannot be opened/found
    │   ├── SessionNotFoundError
    │   ├── SessionBusyError        another process is writing that session
    │   └── DetachError             a fork could not be given its own copy of its history
    │                               (`tether.session.detach`)
    ├── WireError                   strict wire mode found something it would have repaired
    ├── RunError                    a run stopped on a provider error (carries `kind`)
    │   └── LengthResumeExhausted   replies kept hitting the output-token limit with nothing new
    ├── ToolError                   a tool's fault in its own words → an is_error result
    │   ├── PathOutsideError        a path outside the working folder
    │   │                           (`tether.sandbox.paths`)
    │   └── PathDeniedError         a path the policy refuses (`tether.sandbox.policy`)
    ├── HookFailed                  a hook raised, timed out or printed no JSON object
    │                               (`tether.agent.turn.hooks`)
    ├── McpServerError              an MCP server is down, did not start or broke the
    │   │                           connection (`tether.mcp.connection`)
    │   └── McpStartTimeout         it did not start within its `startup_timeout`
    ├── LoginRequiredError          a remote MCP server asks for OAuth and the run is
    │                               headless (`tether.mcp.oauth`)
    ├── LocalModelCrash             the embedded model's process died (also a RuntimeError;
    │                               `tether.providers.local.supervisor`)
    ├── TooManyShells               `tools.max_background` shells run already
    │                               (`tether.tools.exec.background`)
    ├── ServerDown                  a language server's process exited (`tether.lsp.client`)
    ├── WorkerAlive                 a live Jobs worker has that executor id
    │                               (`tether.jobs.liveness`)
    ├── CompactInvalidInputError    nothing to compact / a bad scope (`tether.compaction`)
    ├── CompactionFailedError       the summary call failed for good
    ├── CompactionCancelledError    the summary call was cancelled
    ├── CheckpointError             a snapshot or a restore failed (`tether.checkpoint.shadow`)
    │   └── RewindError             a rewind refused before anything changed
    │                               (`tether.checkpoint.rewind`)
    ├── WorktreeError               a git worktree could not be made or cleaned up
    │                               (`tether.worktrees`)
    ├── MalformedInputError         `tether run`'s stdin is not valid input (`tether.cli`)
    └── StdoutClosed                a command's stdout reader went away (`tether.cli.output`)

Every class is defined here (a test checks it and the tree); the modules named raise them.
Outside the tree: `tether.testing.UnexpectedRequestError` is an `AssertionError` on purpose (a
test failure).

Headless exit codes (`exit_code_for`): 0 success · 1 usage/other · 2 auth · 3 network ·
4 provider · 5 malformed input · 130 cancelled.
"""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal[
    "auth",
    "network",
    "rate_limited",
    "overloaded",
    "context_overflow",
    "provider",
    "malformed",
    "cancelled",
]
"""The stable provider error taxonomy: `RunError.kind`, the `error` / `retry` / `fallback`
events' `kind`, and `tether.providers.base.StreamError.kind`."""


class TetherError(Exception):
    """Base of every error tether raises on purpose."""


class ConfigError(TetherError):
    """A configuration mistake: unknown provider, bad model string, missing optional extra."""


class AuthError(ConfigError):
    """No credentials for a provider that needs them (headless exit code 2)."""


class SessionError(TetherError):
    """A session cannot be opened, created or read."""


class SessionNotFoundError(SessionError):
    """No session with that id exists."""


class SessionBusyError(SessionError):
    """Another writer (another process) holds the session's writer lock."""


class DetachError(SessionError):
    """A fork's history loads but could not be copied into it (a file copy or the write of
    its new file failed); the fork is unchanged (`tether.session.detach`)."""


class WireError(TetherError):
    """Raised by a wire pass in `strict` mode where it would otherwise repair."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class RunError(TetherError):
    """A run stopped on a provider error.

    Attributes:
        kind: the provider error kind (`auth`, `network`, `rate_limited`, `overloaded`,
            `context_overflow`, `provider`, `malformed`, `cancelled`).
        message: the provider's (or tether's) explanation, without the kind prefix.
    """

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: ErrorKind = kind
        self.message = message


class LengthResumeExhausted(RunError):
    """The reply hit the output-token limit (`max_tokens`) and consecutive "Please continue."
    requests brought no text and no tool calls. Kind `provider` (exit code 4).

    Attributes:
        continuations: continuation requests made before giving up.
    """

    def __init__(self, message: str, *, continuations: int) -> None:
        super().__init__("provider", message)
        self.continuations = continuations


class ToolError(TetherError):
    """A tool fault reported to the model as-is (no `ExcType:` prefix), as an is_error result."""


class PathOutsideError(ToolError):
    """A path resolves outside the working folder (or is refused: `~`, a symlink loop).

    Attributes:
        resolved: the real path it resolved to, when known.
    """

    def __init__(self, message: str, resolved: str | None = None) -> None:
        super().__init__(message)
        self.resolved = resolved


class PathDeniedError(ToolError):
    """A path inside the working folder is refused by the deny policy."""


class DurationError(ConfigError, ValueError):
    """A value that is not a duration; the message says what is accepted."""


class ToolConflictError(ConfigError, ValueError):
    """Two tools share a name; the message names both places."""


class RuleError(ConfigError, ValueError):
    """A rule that does not parse (the message names it)."""


class SandboxUnavailableError(ConfigError):
    """A sandbox kind was asked for (argument or `TETHER_SANDBOX`) but does not work here."""


class TracingUnavailableError(ConfigError):
    """Tracing was asked for (`tracing.enabled: true`) but the `tracing` extra is missing."""


class HookFailed(TetherError):
    """A hook failed (raised, exited oddly, printed no JSON object, timed out)."""


class McpServerError(TetherError):
    """An MCP server is down, could not start, or broke the connection; the message names it."""


class McpStartTimeout(McpServerError):
    """An MCP server did not start (spawn, handshake, first listing) within its start-up limit."""


class LoginRequiredError(TetherError):
    """A remote MCP server asks for OAuth authorization and the run is headless."""


class LocalModelCrash(TetherError, RuntimeError):
    """The model's child process died (a native fault in llama.cpp, or killed).

    Attributes:
        signal_name: `SIGSEGV`, …, or `exit N` when it exited without a signal.
        phase: `loading` or `generating`.
        tried: the configurations tried, in words.
        stderr_tail: the child's last stderr lines (llama.cpp's assertion text, if any).
    """

    def __init__(self, signal_name: str, phase: str, tried: list[str], stderr_tail: str) -> None:
        self.signal_name = signal_name
        self.phase = phase
        self.tried = tried
        self.stderr_tail = stderr_tail
        super().__init__(
            f"the embedded model crashed in llama.cpp ({signal_name}) while {phase}; "
            f"tried: {', then '.join(tried)}"
        )


class TooManyShells(TetherError):
    """`max_background` shells are running already."""


class ServerDown(TetherError):
    """The language server's process has exited (or never answered); the message names it."""


class WorkerAlive(TetherError):
    """A live worker already has the executor id (`args[0]`: one line saying which)."""


class CompactInvalidInputError(TetherError):
    """A compaction was asked for on input it cannot summarize (raised before any call): empty
    history, nothing to summarize, an unknown anchor id, or a slice with no text."""


class CompactionFailedError(TetherError):
    """The summary call failed (after its retries). `kind` is the provider error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"compaction failed ({kind}): {message}")
        self.kind = kind


class CompactionCancelledError(TetherError):
    """The caller's cancel signal was set during the summary call."""


class CheckpointError(TetherError):
    """A snapshot or a restore failed (git missing or failing, the data folder unwritable)."""


class RewindError(CheckpointError):
    """A rewind was refused before anything changed (a turn outside the session, no
    checkpoint, an unknown snapshot)."""


class WorktreeError(TetherError):
    """A worktree could not be made or cleaned up (not a git repository, a bad name, git
    failing); the message is one line."""


class MalformedInputError(TetherError, ValueError):
    """stdin does not follow the grammar (exit code 5)."""


class StdoutClosed(TetherError):
    """A command's stdout reader went away (not an `OSError`: click would make it a silent
    exit 1; `tether.cli.output.TetherGroup` says it in one line, exit 0)."""


_EXIT_BY_KIND = {
    "auth": 2,
    "network": 3,
    "rate_limited": 4,
    "overloaded": 4,
    "context_overflow": 4,
    "provider": 4,
    "malformed": 5,
    "cancelled": 130,
}


def exit_code_for(kind: str) -> int:
    """The headless exit code for a provider error kind (1 for an unknown kind)."""
    return _EXIT_BY_KIND.get(kind, 1)
