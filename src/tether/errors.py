"""tether's exception hierarchy. Inside a run, provider and tool failures are values (an
`ErrorEvent`, an `is_error` tool_result); exceptions are for configuration mistakes, corrupt
sessions, failed runs reported to a caller, and bugs.

    TetherError
    ├── ConfigError                 bad settings, unknown provider/model, missing extra
    │   └── AuthError               no credentials for a provider that needs them
    ├── SessionError                a session cannot be opened/found
    │   ├── SessionNotFoundError
    │   └── SessionBusyError        another process is writing that session
    ├── WireError                   strict wire mode found something it would have repaired
    ├── RunError                    a run stopped on a provider error (carries `kind`)
    │   └── LengthResumeExhausted   replies kept hitting the output-token limit with nothing new
    └── CancelledRunError           the run was cancelled (SIGINT/SIGTERM, cancel signal)

Headless exit codes (`exit_code_for`): 0 success · 1 usage/other · 2 auth · 3 network ·
4 provider · 5 malformed input · 130 cancelled.
"""

from __future__ import annotations


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
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class LengthResumeExhausted(RunError):
    """The reply hit the output-token limit (`max_tokens`) and consecutive "Please continue."
    requests brought no text and no tool calls. Kind `provider` (exit code 4).

    Attributes:
        continuations: continuation requests made before giving up.
    """

    def __init__(self, message: str, *, continuations: int) -> None:
        super().__init__("provider", message)
        self.continuations = continuations


class CancelledRunError(TetherError):
    """The run was cancelled; the partial turn was persisted first."""


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
