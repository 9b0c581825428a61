"""The `tools` section of the typed settings (`tether.settings.model`): tool-call limits, the
sandbox, the environment passed to tools, the web tool and the loop-breaker rules."""

from __future__ import annotations

import re
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from tether.settings.base import Duration
from tether.settings.base import Section as _Section

DEFAULT_REFUSED: tuple[str, ...] = (
    # exact names
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    # patterns (case-insensitive)
    "*_API_KEY",
    "*_APIKEY",
    "*_TOKEN",
    "*_SECRET*",
    "*_KEY",
    "*_PRIVATE_KEY",
    "*_ACCESS_KEY",
    "*_PASSWORD",
    "*_PASSWD",
    "*_CREDENTIALS",
    # secrets by convention: database passwords and URLs, the ssh agent
    "PGPASSWORD",
    "PGPASSFILE",
    "MYSQL_PWD",
    "DATABASE_URL",
    "*_DATABASE_URL",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
)
"""Variable names (exact, or globs with `*`) never passed to tool subprocesses; matched
case-insensitively (`tools.refused_env`'s default; `tether.tools.env.scrubbed_env` applies
them). The settings list `tools.allow_env` lets named ones back in."""


def _default_refused() -> list[str]:
    return list(DEFAULT_REFUSED)


SandboxKind = Literal["auto", "bwrap", "landlock", "none"]

class WebSettings(_Section):
    """`tools.web`: the `web_fetch` tool (`tether.tools.builtin.web`) and the provider's own
    web search (`web_search`, `tether.agent.turn.web_search`).

    Attributes:
        fetch: offer `web_fetch` to the agent `tether run` builds.
        search: offer the provider's server-side `web_search` where the model has one
            (Anthropic, OpenAI Responses; not in safe or plan mode, not when a permission rule
            denies or asks for `web_search`). Each search is billed by the provider ($0.01).
        search_max_uses: searches per request at most (Anthropic `max_uses`; OpenAI has no
            cap); None: no cap.
        allow_private: let it reach private, loopback, link-local and other non-global
            addresses (off: every address a host resolves to is checked, at each redirect hop,
            and one such address refuses the fetch; the server-side request forgery guard).
        allowed_domains: when not empty, only these hosts and their subdomains are fetched
            (`example.com` also allows `docs.example.com`) or searched.
        denied_domains: these hosts and their subdomains are refused (checked before
            `allowed_domains`), and left out of search results.
        timeout_s: the time limit of each request (connect and each read), seconds (JSON key
            `timeout`).
        max_bytes: the most bytes of a body read; a longer page is cut there (noted).
        max_redirects: redirects followed per fetch; one more is an error.
    """

    fetch: bool = True
    search: bool = True
    search_max_uses: int | None = Field(default=5, ge=1)
    allow_private: bool = False
    allowed_domains: list[str] = Field(default_factory=list[str])
    denied_domains: list[str] = Field(default_factory=list[str])
    timeout_s: Duration = Field(default=30.0, alias="timeout", gt=0)
    max_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    max_redirects: int = Field(default=5, ge=0)


class LoopRuleSettings(_Section):
    """`tools.loop_breaker.<tool>`: how repeated identical calls of one tool are handled
    (`tether.tools.exec.hygiene`).

    Attributes:
        policy: `block` (more than `after` identical consecutive calls are refused without
            running), `replay` (an identical call gets the earlier result, marked) or `off`.
        after: for `block`, the identical consecutive calls that run before the next ones are
            refused.
        reason: what the refusal tells the model to do instead (None: "Change the input or
            take a different approach.").
        skip: regular expressions; a call whose command (shell tools: its canonical form) or,
            for other tools, its arguments as canonical JSON match one is opted out: never
            counted, blocked nor replayed (e.g. `^gh run view` for a deliberate poll).
    """

    policy: Literal["block", "replay", "off"] = "block"
    after: int = Field(default=5, ge=1)
    reason: str | None = None
    skip: list[str] = Field(default_factory=list[str])

    @model_validator(mode="after")
    def _patterns(self) -> Self:

        for pattern in self.skip:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"skip: {pattern!r} is not a regular expression ({exc})") from None
        return self


class ToolsSettings(_Section):
    """`tools`: limits and policy for tool calls.

    Attributes:
        timeout_s: default time limit of one tool call, seconds (JSON key `timeout`).
        max_timeout_s: the ceiling of a time limit the model asks for (a tool's `timeout`
            argument, `bash`'s `timeout_s`), seconds (JSON key `max_timeout`); never below
            `timeout_s`.
        output_threshold_chars: results longer than this (characters) are persisted to disk.
        refused_env: variable names (exact or `*` globs, case-insensitive) never passed to tool
            subprocesses; see `tether.tools.env.scrubbed_env`.
        deny_paths: globs over root-relative paths the file tools refuse to read and write, in
            addition to the built-in dotenv rules (`tether.sandbox.policy.DEFAULT_POLICY`).
        network: whether sandboxed tools may use the network.
        safe: only tools declared `safe` may run.
        folders: tool folders (relative to the project) scanned for tool modules, besides
            `.tether/tools/` (see `tether.tools.scan`); their tools run in a worker process.
            Like `.git/` and `.tether/`, they are read-only to every tool.
        write_paths: globs relative to the project (anchored: `output`, `build/**`) where
            tools may write, at or below a match; None: the whole working folder. Enforced by
            the file tools by real path and by the OS sandbox for commands (only those folders
            are bound writable; a plain folder name is created when missing).
        allow_env: variable names (exact or `*` globs) let through to tool subprocesses even
            though `refused_env` matches them (e.g. `DATABASE_URL` for a test database).
        allow_protected_writes: the opt-in that lets tools write `.git/`, `.tether/` and the
            tool folders (off: they are read-only to every tool).
        allow_unix_sockets: unix sockets outside the sandbox that commands may connect to
            (paths; `~` expanded; a folder lets in every socket below it), e.g.
            `/run/user/1000/gnupg/S.gpg-agent`. The rest are refused (`tether.sandbox.unixguard`).
        max_processes: processes at once per tool call (a fork bomb is stopped); None: no
            limit. Enforced by a pids cgroup where tether may make one, else RLIMIT_NPROC.
        max_file_size: the largest file a tool command may write, bytes; None: no limit.
        max_background: background shells (`bash` with `run_in_background`) running at once
            per session; a start past it is refused.
        sandbox: the OS sandbox for tool subprocesses: `auto` (`TETHER_SANDBOX`, else bwrap,
            else Landlock, else none), `bwrap`, `landlock`, or `none` (no sandbox: safe mode
            is then forced).
        approval: which calls the host is asked to approve (`tether.agent.approval`): `ask`
            (every non-safe call), `auto-edit` (file edits run, the rest is asked),
            `read-only` (safe mode), `auto` (nothing asked). Only a host with an approver
            (the TUI, `Host(approver=...)`) asks; headless, `ask` runs calls unasked.
        web: the `web_fetch` tool's policy (`WebSettings`).
        loop_breaker: per tool, the rule for repeated identical calls (`LoopRuleSettings`),
            over the built-in one (`bash`: blocked after 5 identical consecutive commands).
        only: the only tools offered, by name, whatever their kind (built-in, tool folders,
            `skill`, `task`, MCP `mcp__<server>__<tool>` and `mcp_read_resource`); None: all.
            A Job's `tools` field sets it. A name that is no tool the settings give, and not
            an MCP name (known only once its server starts), is refused (`ConfigError`).
            `recall` stays offered once compaction elides turns.
    """

    timeout_s: Duration = Field(default=120.0, alias="timeout")
    max_timeout_s: Duration = Field(default=1200.0, alias="max_timeout", gt=0)
    output_threshold_chars: int = Field(default=50_000, ge=1)
    refused_env: list[str] = Field(default_factory=lambda: _default_refused())
    deny_paths: list[str] = Field(default_factory=list[str])
    network: bool = False
    safe: bool = False
    folders: list[str] = Field(default_factory=list[str])
    write_paths: list[str] | None = None
    allow_env: list[str] = Field(default_factory=list[str])
    allow_protected_writes: bool = False
    allow_unix_sockets: list[str] = Field(default_factory=list[str])
    max_processes: int | None = Field(default=1024, ge=1)
    max_file_size: int | None = Field(default=512 * 1024 * 1024, ge=1)
    max_background: int = Field(default=8, ge=0)
    sandbox: SandboxKind = "auto"
    approval: Literal["ask", "auto-edit", "read-only", "auto"] = "ask"
    web: WebSettings = Field(default_factory=WebSettings)
    only: list[str] | None = None
    loop_breaker: dict[str, LoopRuleSettings] = Field(default_factory=dict[str, LoopRuleSettings])
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict[str, dict[str, Any]])
    """Each tool's own settings, by tool name (`tools.settings.<tool>.<key>`): a tool that
    declares them (`@tool(settings=Model)`) has them validated by its model when the agent is
    built (a bad value is one line naming the key); names of tools not loaded are kept as
    they are. `tether tool --list` shows each tool's keys and defaults."""
    add_dirs: list[str] = Field(default_factory=list[str])
    """Folders outside the working folder the tools may use too (`--add-dir`, `/add-dir`;
    Claude Code's `additionalDirectories`): the file tools read and write there and commands
    may write there; `PATH:ro` adds one read-only. Absolute, `~/…`, or relative to the working
    folder; a folder that holds tether's own (settings, sessions) is refused."""
