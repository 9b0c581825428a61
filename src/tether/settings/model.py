"""The typed settings model (pydantic), validated from the merged JSON layers.

Owns: the schema — section and key names as they appear in `settings.json`, defaults, units,
and value checks. Does not own: reading or writing files (`tether.settings.files`), nor acting on
the values (the loop, providers, tools and compaction read them).

Python attribute names carry units where JSON keys do not: `tools.timeout` is `tools.timeout_s`,
`retry.base` / `retry.max` are `retry.base_s` / `retry.max_s` (seconds, float). A duration in a
file is a number of milliseconds or a string such as `"30s"` (`tether.durations`);
`model_dump(mode="json", by_alias=True)` writes it back as such a string.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self, cast

from pydantic import (
    Field,
    StringConstraints,
    model_validator,
)

from tether.effort import Effort
from tether.settings.base import Duration, Fraction
from tether.settings.base import Section as _Section
from tether.settings.jobs import JobsSettings as JobsSettings
from tether.settings.log import LogSettings
from tether.settings.lsp import LspServerSettings as LspServerSettings
from tether.settings.lsp import LspSettings
from tether.settings.mcp import McpOAuthSettings as McpOAuthSettings
from tether.settings.mcp import McpServerSettings as McpServerSettings
from tether.settings.mcp import McpSettings
from tether.settings.safety import CheckpointSettings, PermissionsSettings
from tether.settings.tools import LoopRuleSettings as LoopRuleSettings
from tether.settings.tools import SandboxKind as SandboxKind
from tether.settings.tools import ToolsSettings
from tether.settings.tools import WebSettings as WebSettings

ProviderType = Literal[
    "anthropic",
    "openai",
    "openai-responses",
    "google",
    "ollama",
    "local",
    "openai-compatible",  # a declared endpoint (`tether.providers.compatible`)
    "anthropic-compatible",
]

AuthScheme = Literal["bearer", "x-api-key", "api-key", "none"]
"""How a declared endpoint gets its key (`ProviderSettings.auth`)."""

OutputFormat = Literal["stream-json", "json", "text"]
"""What `tether run` prints on stdout (`tether.cli.formats`)."""

NotifyMode = Literal["auto", "osc9", "osc777", "bell", "off"]
"""How the TUI notifies (`tether.tui.notify`)."""


class ModelEntry(_Section):
    """One entry of the `model` fallback selection written as an object."""

    provider: str = Field(min_length=1)
    model: str = ""

    @property
    def spec(self) -> str:
        """`provider/model` (or just `provider` when the model is empty), as `--model` takes."""
        return f"{self.provider}/{self.model}" if self.model else self.provider


class ProviderSettings(_Section):
    """One endpoint, `providers.<name>`. The name is what `--model NAME/MODEL`, `tether login
    NAME` and the `model` selection refer to; `type` picks the adapter (defaults to the name
    when that is a provider type).

    Attributes:
        type: the adapter: `anthropic`, `openai` (Chat Completions), `openai-responses`,
            `google`, `ollama`, `local`.
        base_url: the endpoint (an OpenAI-compatible server, a gateway); None: the vendor's.
        model: the model used when a selection names only the provider.
        api_key_env: the environment variable holding the key (instead of the type's default,
            e.g. `OPENAI_API_KEY`); tool subprocesses never see it (`AgentConfig.refused_env`).
        headers: extra HTTP headers sent with every request (a gateway's, a tenant id).
        auth: how the key is sent: `bearer` (`Authorization: Bearer KEY`; the
            `openai-compatible` default), `x-api-key` (the `anthropic-compatible` default),
            `api-key` (Azure's header), `none`.
        models_url: where `tether models --test` lists the models (default: `<base_url>/models`,
            `<base_url>/v1/models` for `anthropic-compatible`).
    """

    type: ProviderType | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # `openai-compatible` / `anthropic-compatible` endpoints (`tether.providers.compatible`):
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    auth: AuthScheme | None = None
    models_url: str | None = None

    @model_validator(mode="after")
    def _compatible_needs_url(self) -> Self:
        if self.type in ("openai-compatible", "anthropic-compatible") and not self.base_url:
            raise ValueError(f"type {self.type!r} needs a base_url")
        return self


class RetrySettings(_Section):
    """`retry`: how often and how patiently a failed request is retried (read by the retry layer).

    Attributes:
        max_attempts: attempts per request including the first (≥ 1).
        base_s: first backoff delay, seconds (JSON key `base`).
        max_s: cap on one backoff delay, seconds (JSON key `max`).
        stream_idle_s: the longest silence of an open reply stream, seconds (JSON key
            `stream_idle_timeout`; Codex's `stream_idle_timeout_ms` is 5 minutes too); past
            it the attempt fails as a network fault: retried, then the next model of the
            chain. 0: no limit.
        fallback_cooldown_s: how long a model that failed over is skipped by later requests
            of the agent (the run, the chat or ACP session), seconds (JSON key
            `fallback_cooldown`); a longer Retry-After wins; 0 goes back to the head every
            request.
    """

    max_attempts: int = Field(default=3, ge=1)
    base_s: Duration = Field(default=2.0, alias="base")
    max_s: Duration = Field(default=30.0, alias="max")
    stream_idle_s: Duration = Field(default=300.0, alias="stream_idle_timeout", ge=0)
    fallback_cooldown_s: Duration = Field(default=300.0, alias="fallback_cooldown", ge=0)


class ModelWindow(_Section):
    """`context.windows.<model>`: a model's limits, in tokens."""

    context_window: int = Field(ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)


class ContextSettings(_Section):
    """`context`: context-window accounting and compaction triggers.

    Attributes:
        windows: per model name, its context window and output cap (tokens).
        threshold: compact when pressure exceeds this share of the effective window.
        output_reserve: tokens kept free for the reply (the effective window subtracts it).
        runaway_total: a turn whose request would exceed this share of the window is runaway.
        runaway_growth: one turn growing the context by more than this share is runaway.
        auto_compact: compact automatically when the threshold is crossed.
        window: the first model's context window in tokens, overriding `windows`, what the
            provider reports and the known-models table (`--context-window`); None: resolved.
        instruction_files: the names of instruction files, in order of preference: in each
            folder (the user config folder, then the project root down to the working folder)
            the first found is loaded into the system prompt; empty: none.
        instruction_max_bytes: the most bytes of instruction-file text in the system prompt
            (what is over it is cut, with a note saying what).
        prune: before the summary pass, replace old tool results in the request with short
            stubs that `recall` brings back (oldest first, in chunks; docs/compaction.md).
        idle_compact: after a pause longer than the provider's prompt-cache lifetime, make the
            context smaller (prune, then compact) before the next request when it would
            re-send more than `idle_compact_tokens` tokens uncached.
        idle_compact_tokens: the size (tokens) above which an idle session is compacted.
        cache_ttl_s: the prompt-cache lifetime in seconds for `idle_compact`; None: the
            provider's documented one (Anthropic, OpenAI, Gemini: 5 minutes).
        elide_stale_reads: in the request, replace an old `read` output of a file that a later
            `write`/`edit` changed with a short note naming that call (`read` gets the current
            content, `recall` the old one; docs/compaction.md).
        date: the date the system prompt states as the session's start (`YYYY-MM-DD`); None:
            today. Pins the prompt for reproducible runs and tests (the date line changes a
            small model's output from one day to the next).

    Shares are fractions in (0, 1]; values above 1 read as percentages (90 → 0.9).
    """

    windows: dict[str, ModelWindow] = Field(default_factory=dict[str, ModelWindow])
    threshold: Fraction = 0.8
    output_reserve: int = Field(default=20_000, ge=0)
    runaway_total: Fraction = 0.9
    runaway_growth: Fraction = 0.4
    auto_compact: bool = True
    window: int | None = Field(default=None, ge=256)
    instruction_files: list[str] = Field(
        default_factory=lambda: ["AGENTS.md", "CLAUDE.md"],
    )
    instruction_max_bytes: int = Field(default=32 * 1024, ge=0)
    prune: bool = True
    idle_compact: bool = False
    idle_compact_tokens: int = Field(default=50_000, ge=0)
    cache_ttl_s: float | None = Field(default=None, gt=0)
    elide_stale_reads: bool = True
    date: datetime.date | None = None


class ReadSettings(_Section):
    """`read`: the `read` tool's session memory.

    Attributes:
        dedup: remember which file slices were read (path, lines, mtime and size); a re-read
            of an unchanged slice goes out in the request as a short note pointing at the
            earlier output while that output is still in the request (else in full), and
            restoration after a compaction re-reads the files read last
            (docs/compaction.md).
    """

    dedup: bool = True


class ThinkingSettings(_Section):
    """`run.thinking`: the reasoning budget and how it decays over a run.

    Attributes:
        budget_tokens: the thinking budget of the first turns (tokens); None: thinking off.
        decay: `none`, `step` (drop to `floor` after `after_turn`), `geometric` (multiply by
            `factor` each turn after `after_turn`, not below `floor`).
        floor: the lowest budget decay reaches (tokens).
        after_turn: the turn after which decay starts (1-based).
        factor: the geometric factor, in (0, 1].
    """

    budget_tokens: int | None = Field(default=None, ge=0)
    decay: Literal["none", "step", "geometric"] = "none"
    floor: int | None = Field(default=None, ge=0)
    after_turn: int | None = Field(default=None, ge=0)
    factor: float | None = Field(default=None, gt=0, le=1)


class RunSettings(_Section):
    """`run`: limits of one `run` call.

    Attributes:
        max_turns: cap on model requests per run.
        continuation_limit: how many times a reply cut at `max_tokens` is continued.
        thinking: the reasoning budget (see `ThinkingSettings`).
        system: replaces tether's default system prompt (`--system`); None: the default.
            The instruction files and the skills listing follow either.
        append_system: text added at the end of the system prompt (`--append-system`).
        max_output_tokens: cap on generated tokens per request, or None for the provider's.
        temperature: sampling temperature, or None for the provider default.
        timeout_s: the time limit of a whole `tether run` (JSON key `timeout`, `--timeout`):
            past it the run is cancelled (the partial turn persisted) and exits 124; None: none.
        output_format: what `tether run` prints on stdout (`--output-format`): `stream-json`
            (every event as a JSON line, as it comes), `json` (one result object at the end),
            `text` (the answer only).
    """

    max_turns: int = Field(default=50, ge=1)
    continuation_limit: int = Field(default=3, ge=0)
    thinking: ThinkingSettings = Field(default_factory=ThinkingSettings)
    system: str | None = None
    append_system: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    max_budget_usd: float | None = Field(default=None, gt=0)
    """US dollars one run may spend, subagents included (`--max-budget-usd`): it stops before a
    request whose estimated cost would pass it (`tether.agent.turn.budget`); None: no cap."""
    timeout_s: Duration | None = Field(default=None, alias="timeout")
    """The whole run's time limit (`--timeout`; JSON key `timeout`): then cancelled, exit 124."""
    output_format: OutputFormat = "stream-json"
    effort: Effort | None = None
    """The reasoning effort (`--effort`, `/effort`): `low`, `medium`, `high` or `max`, mapped
    per provider (`tether.effort`: Anthropic's thinking budget, OpenAI's
    `reasoning.effort`, Gemini's thinking budget, Ollama's `think`); it wins over
    `run.thinking`'s budget. None: the provider's own setting. Not sent to a model that
    does not reason (one line says so). A session keeps the level it was last run with."""
    output_schema: str | dict[str, Any] | None = None
    """A JSON Schema (file path or object) the final answer must match (`--output-schema`);
    `output_schema_retries`: times the run asks again after an answer that does not validate."""
    output_schema_retries: int = Field(default=2, ge=0)
    max_tool_calls: int | None = Field(default=None, ge=0)
    """Tool calls one run may execute (`--max-tool-calls`; `tether.agent.turn.tool_limit`)."""


class SkillsSettings(_Section):
    """`skills`: Agent Skills (agentskills.io folders with a `SKILL.md`; `tether.skills`).

    Attributes:
        enabled: False: no skills (none listed, no `skill` tool, no skill commands).
        allow: only skills of these names (tether's own and an extension's are kept);
            None: every skill found.
        deny: skills of these names are left out.
        listing_share: the share of the first model's window the system prompt's skills
            listing may take (fraction, or a percentage above 1).
    """

    enabled: bool = True
    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list[str])
    listing_share: Fraction = 0.02


class TuiSettings(_Section):
    """`tui`: the terminal UI.

    Attributes:
        notify: how the TUI tells an unfocused terminal a run ended or waits for you: `auto`
            (OSC 777, else OSC 9, where known to be shown; else the bell), `osc9`, `osc777`, `bell`, `off`.
        theme: one of Textual's themes (`/theme`; `ansi-dark` / `ansi-light`: the terminal's own
            colours); None: Textual's default. vim: the prompt starts in vim mode (`/vim`).
    """

    notify: NotifyMode = "auto"
    theme: str | None = None
    vim: bool = False


class TracingSettings(_Section):
    """`tracing`: OpenTelemetry spans for runs, requests, tool calls and compactions (see
    `tether.tracing`; needs the `tracing` extra).

    Attributes:
        enabled: True: on (a missing extra is a configuration error); False: off; None (the
            default): on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set in the environment.
        endpoint: the OTLP/HTTP base URL (`http://localhost:4318`); None: the SDK's
            `OTEL_EXPORTER_OTLP_*` environment variables.
        service_name: the `service.name` resource attribute of exported spans.
    """

    enabled: bool | None = None
    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    service_name: str = Field(default="tether", min_length=1)


AGENT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
"""Names of named subagents (`agents.<name>`) and MCP servers: letters, digits, `_`, `-`, `.`."""


class SubagentSettings(_Section):
    """`agents.<name>`: a subagent the `task` tool can run by name (`tether.agent.subagents`).

    Attributes:
        description: one line offered to the model in the `task` tool's description.
        system: its system prompt; None: the generic subagent prompt.
        tools: the names of the tools it is offered (those of its caller's it has; a name its
            caller lacks is left out); None: all of its caller's tools.
        disallowed_tools: tools it is never offered, even when `tools` or a `task` call
            names them (Claude Code's `disallowedTools`).
        model: its model (`"provider/model"`, as `--model`); None: its caller's chain.
        isolation: `worktree`: it works in a git worktree of its own (`tether.worktrees`,
            branch `tether/<name>-<call>`), removed after it when unchanged, else kept (its
            answer ends with a line saying where); `none`: in its caller's folder.
    """

    description: str = ""
    system: str | None = None
    tools: list[str] | None = None
    disallowed_tools: list[str] = Field(default_factory=list[str])
    model: str | None = Field(default=None, min_length=1)
    isolation: Literal["none", "worktree"] = "none"


_AGENTS_KEYS = frozenset({"task_tool", "spawn", "max_depth", "max_concurrent", "named"})


class AgentsSettings(_Section):
    """`agents`: subagents run by the `task` tool (`tether.agent.subagents`).

    Any key besides the ones below names a subagent (`agents.reviewer: {system, tools,
    model}`); they are gathered in `named`.

    Attributes:
        task_tool: offer the `task` tool (in `tether run`, the TUI and `Agent.from_settings`).
        spawn: the spawn permission: `ask` (a `task` call goes through the approval gate like
            any non-safe call, `kind="spawn"`), `allow` (never asked), `deny` (refused).
        max_depth: how deep subagents nest: the main agent is depth 0, its children depth 1,
            ...; a `task` call that would start an agent deeper than this is refused.
        max_concurrent: children of one agent running at once (more calls wait their turn).
        named: the named subagents (`SubagentSettings`).
    """

    task_tool: bool = True
    spawn: Literal["ask", "allow", "deny"] = "ask"
    max_depth: int = Field(default=2, ge=0)
    max_concurrent: int = Field(default=4, ge=1)
    named: dict[
        Annotated[str, StringConstraints(pattern=AGENT_NAME_PATTERN)], SubagentSettings
    ] = Field(default_factory=dict[str, SubagentSettings])

    @model_validator(mode="before")
    @classmethod
    def _gather_named(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        raw = cast(dict[str, Any], data)
        extra = {k: v for k, v in raw.items() if k not in _AGENTS_KEYS}
        if not extra:
            return raw
        kept = {k: v for k, v in raw.items() if k in _AGENTS_KEYS}
        named = dict(cast(dict[str, Any], kept.get("named") or {}))
        for name, entry in extra.items():
            if name in named:
                raise ValueError(f"subagent {name!r} is named twice")
            named[name] = entry
        out: dict[str, Any] = {**kept, "named": named}
        return out

    @staticmethod
    def names_in(raw: Any) -> list[str]:
        """The subagent names one settings file's raw `agents` object defines (its extra keys
        and the keys of its `named`)."""
        if not isinstance(raw, dict):
            return []
        section = cast(dict[str, Any], raw)
        named = section.get("named")
        inner = list(cast(dict[str, Any], named)) if isinstance(named, dict) else []
        return [k for k in section if k not in _AGENTS_KEYS] + inner


class ShellHookSettings(_Section):
    """One shell hook: a command run with `bash -c` under the OS sandbox, in the project
    folder, with the hook's input as JSON on stdin (`tether.agent.turn.hooks`).

    Attributes:
        command: the command line.
        tools: for `before_tool` / `after_tool`: only calls of these tools (names or `*`
            globs); None: every call.
        timeout_s: its time limit, seconds (JSON key `timeout`); None: `hooks.timeout`.
    """

    command: str = Field(min_length=1)
    tools: list[str] | None = None
    timeout_s: Duration | None = Field(default=None, alias="timeout", gt=0)


class HooksSettings(_Section):
    """`hooks`: shell commands run at points of the loop (`tether.agent.turn.hooks`; JSON on stdin,
    a JSON decision on stdout, exit code 2 denies with stderr as the reason, like Claude
    Code's hooks). A project's hooks come from its settings file, loaded only once the project
    is approved (`tether trust`).

    Attributes:
        timeout_s: the default time limit of one hook, seconds (JSON key `timeout`).
        on_failure: what a `before_tool` hook that fails (cannot start, crashes, another
            exit code than 0 or 2, bad JSON, its time limit) means for the call: `allow` (it
            runs, as at Claude Code) or `deny` (it is refused; the model is told why).
        before_tool: before a tool call runs (before the approval gate): allow, deny with a
            reason, or rewrite its arguments.
        after_tool: after a tool call ran, with its result.
        user_prompt: before a new user prompt is sent: allow, deny (the run ends without a
            request), or rewrite the prompt.
        before_compaction: before a compaction starts.
        stop: when the model gave a final answer: allow the stop, or deny with a reason
            (sent to the model as a user message; the run goes on).
        max_stop_denials: how many times in a row the `stop` hooks may refuse an answer in
            one run; refused once more, the answer stands with one `stop_hook_loop` warning
            (a hook that always refuses would otherwise loop until `--max-turns`).
    """

    timeout_s: Duration = Field(default=30.0, alias="timeout", gt=0)
    on_failure: Literal["allow", "deny"] = "allow"
    max_stop_denials: int = Field(default=3, ge=1)
    before_tool: list[ShellHookSettings] = Field(default_factory=list[ShellHookSettings])
    after_tool: list[ShellHookSettings] = Field(default_factory=list[ShellHookSettings])
    user_prompt: list[ShellHookSettings] = Field(default_factory=list[ShellHookSettings])
    before_compaction: list[ShellHookSettings] = Field(default_factory=list[ShellHookSettings])
    stop: list[ShellHookSettings] = Field(default_factory=list[ShellHookSettings])


ModelSelection = str | list[str | ModelEntry] | None


class AgentConfig(_Section):
    """Everything configurable about an agent, in one typed shape: the settings files parse
    into it (merged from the user and project files, see `tether.settings`), `tether run`'s
    flags override its fields (`with_values`), and `tether.Agent(model, config=...)` consumes
    it. Sections mirror `settings.json`: `model`, `providers`, `retry`, `tools`, `context`,
    `run`, `mcp`, `agents`, `hooks`, `jobs`, `checkpoints`, `permissions`, `skills`, `tui`, `lsp` (later issues add theirs the same way: one `XSettings` section class, one field).

        AgentConfig(run={"max_turns": 10}, tools={"safe": True})

    Attributes:
        model: the model selection: `"provider/model"`, a list of such strings or
            `{provider, model}` objects tried in order, or None (the built-in default).
        providers: named endpoints (`ProviderSettings`).
    """

    model: ModelSelection = None
    providers: dict[str, ProviderSettings] = Field(default_factory=dict[str, ProviderSettings])
    retry: RetrySettings = Field(default_factory=RetrySettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    agents: AgentsSettings = Field(default_factory=AgentsSettings)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    tui: TuiSettings = Field(default_factory=TuiSettings)
    lsp: LspSettings = Field(default_factory=LspSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    read: ReadSettings = Field(default_factory=ReadSettings)

    def refused_env(self) -> list[str]:
        """`tools.refused_env` plus every provider's `api_key_env`: what tools never see."""
        extra = [p.api_key_env for p in self.providers.values() if p.api_key_env]
        return [*self.tools.refused_env, *extra]

    def to_json(self) -> dict[str, Any]:
        """The settings as the JSON a file would hold (durations as strings, JSON key names)."""
        return self.model_dump(mode="json", by_alias=True)

    def with_values(self, values: Mapping[str, Any]) -> Self:
        """A copy with fields replaced by dotted Python names (`{"tools.safe": True,
        "run.max_turns": 5}`), validated like a settings file (a duration is a string such as
        `"30s"` or a number of milliseconds, as in the file). A name ending in `+` adds to a
        list instead (`{"tools.add_dirs+": [...]}`: `--add-dir` adds to the settings' folders),
        each value once.

        Raises:
            pydantic.ValidationError: an unknown name or an invalid value.
        """
        data = self.model_dump(mode="json")
        for dotted, value in values.items():
            *parents, leaf = dotted.split(".")
            node = data
            for part in parents:
                node = node[part]
            if leaf.endswith("+"):
                leaf = leaf[:-1]
                kept: list[Any] = list(node.get(leaf) or [])
                node[leaf] = kept + [v for v in value if v not in kept]
            else:
                node[leaf] = value
        return type(self).model_validate(data)
