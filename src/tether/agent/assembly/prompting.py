"""The system prompt's facts at session start, for `Agent.from_settings` and its hosts.

Owns: `prepare_context` (a resumed session's stored facts, or new ones taken now: the
environment, the instruction files, the skill catalog; a note when an instruction file changed
since the session started), `context_tools` (the `skill` tool over the catalog),
`context_report` (the one line a host shows: which files and how many skills),
`session_commands` (the `/name` commands of a session: prompt files and skills),
`skills_budget_chars` (the listing's cap from the window), and for `assemble`:
`skill_policy` (the path policy with the skill folders `read` may open) and
`subfolder_notes` (the subfolder instruction files a session adds as it goes).
Does not own: the data and the rendering (`tether.prompt`), the skills (`tether.skills`), the
record of parts (`tether.agent.assembly.parts`: it renders the prompt from the session's facts).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path

from tether.agent.assembly import build
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.errors import ConfigError
from tether.prompt.facts import SessionContext
from tether.prompt.gather import (
    SubfolderInstructions,
    environment,
    load_instructions,
    project_root,
    refusal,
)
from tether.providers.base import Provider
from tether.providers.catalog import info_of
from tether.sandbox.detect import detect_sandbox
from tether.sandbox.policy import PathPolicy, policy_for
from tether.session.layout import default_root
from tether.settings import AgentConfig, user_config_dir
from tether.settings.trust import check_trust
from tether.skills.catalog import BUILTIN_SKILLS_DIR, entries, load_catalog
from tether.skills.commands import Command, load_commands
from tether.skills.spec import Skill
from tether.skills.tool import SKILL_TOOL, skill_read_roots, skill_tool
from tether.tokens import CHARS_PER_TOKEN
from tether.tools.base import Tool
from tether.tools.env import redact_secrets, secret_values
from tether.tools.registry import ToolRegistry


def skills_budget_chars(config: AgentConfig, chain: Sequence[Provider]) -> int:
    """The skills listing's cap: `skills.listing_share` of the first model's window, in
    characters (at ~4 per token)."""
    limits = build.model_limits(
        chain[0],
        config.context.window,
        lambda _line: None,
        configured=build.configured_windows(config),
    )
    return int(limits.context_window * config.skills.listing_share * CHARS_PER_TOKEN)


def gather_context(
    root: Path,
    config: AgentConfig,
    *,
    budget_chars: int,
    note: Callable[[str], None],
    headless: bool = False,
    builtin_skills: bool = True,
    extensions: Sequence[Skill] = (),
) -> SessionContext:
    """The facts of a session starting now in `root` (runs `git`, reads the instruction files
    and the skill folders; one note per invalid skill or refused import). `headless`: no
    host asks for approval (the mode then is `auto` in effect); `builtin_skills`: add
    tether's own skill; `extensions`: skills an extension adds (kept under `skills.allow`)."""
    kind = config.tools.sandbox
    try:
        sandbox = detect_sandbox(None if kind == "auto" else kind)
    except Exception:  # a forced kind that does not work: `assemble` reports it
        sandbox = None
    approval = "read-only" if config.tools.safe or sandbox is None else config.tools.approval
    if headless and approval in ("ask", "auto-edit"):
        approval = "auto"  # nobody to ask: `tether.agent.approval`
    pinned = config.context.date  # the prompt's date, pinned by the settings (tests)
    env = environment(
        root,
        sandbox="none" if sandbox is None else sandbox.kind,
        network=config.tools.network,
        approval=approval,
        today=date.today if pinned is None else (lambda: pinned),
    )
    user_dir = user_config_dir()
    home = Path.home()
    loaded = load_instructions(
        root,
        names=config.context.instruction_files,
        user_dir=user_dir,
        home=home,
        cap_bytes=config.context.instruction_max_bytes,
        denied=read_denied(config, root),
    )
    for problem in loaded.problems:
        note(f"note: {problem}")
    catalog = load_catalog(
        root,
        project_root(root),
        user_dir=user_dir,
        home=home,
        enabled=config.skills.enabled,
        allow=config.skills.allow,
        deny=config.skills.deny,
        builtin=builtin_skills,
        extensions=extensions,
        warn=note,
    )
    # what a tool's output would have masked (a key pasted into a project file) is masked in
    # the prompt too: it goes to the provider and into the session file
    values = secret_values(None, build.refused_env(config), tuple(config.tools.allow_env))
    instructions = tuple(replace(f, text=redact_secrets(f.text, values)) for f in loaded.files)
    return SessionContext(
        environment=env,
        instructions=instructions,
        instructions_note=loaded.note,
        skills=entries(catalog),
        skills_budget_chars=budget_chars,
    )


def changed_files(context: SessionContext) -> list[str]:
    """The instruction files whose content on disk differs from what the session loaded."""
    out: list[str] = []
    for f in context.instructions:
        try:
            digest = hashlib.sha256(Path(f.path).read_bytes()).hexdigest()
        except OSError:
            digest = ""
        if digest != f.sha256:
            out.append(f.name)
    return out


def prepare_context(
    root: Path,
    config: AgentConfig,
    chain: Sequence[Provider],
    session: AgentSession,
    *,
    note: Callable[[str], None],
    headless: bool = False,
) -> SessionContext:
    """The session's facts: the stored ones of a resumed session (a note names instruction
    files changed since: the session keeps what it started with, so its prompt stays the
    same), else new ones, set on `session` to be recorded when its file opens. tether's own
    skill is left out for a model that takes the compact prompt (the embedded model: one tool
    fewer to choose from)."""
    if session.context is not None:
        changed = changed_files(session.context)
        if changed:
            note(
                f"note: {', '.join(changed)} changed since this session started; the session "
                "keeps the version it started with (a new session reads the new one)"
            )
        return session.context
    info = info_of(chain[0])
    context = gather_context(
        root,
        config,
        budget_chars=skills_budget_chars(config, chain),
        note=note,
        headless=headless,
        builtin_skills=not (info is not None and info.compact_prompt),
    )
    session.context = context
    session.record_context = True
    return context


def context_tools(context: SessionContext, tools: Sequence[Tool]) -> list[Tool]:
    """The tools the facts add: `skill` when the catalog has skills (unless a tool of that
    name is already offered)."""
    if not context.skills or any(t.name == SKILL_TOOL for t in tools):
        return []
    return [skill_tool(context.skills, user_dir=user_config_dir())]


def context_report(context: SessionContext) -> str | None:
    """`context: instruction files AGENTS.md (2,112 bytes), ~/.config/tether/AGENTS.md (301
    bytes); skills: deploy, tether-extend (built in)` (None when there are neither files nor
    skills; past `SHOWN_SKILLS` names, how many more)."""
    parts: list[str] = []
    if context.instructions:
        files = ", ".join(f"{f.name} ({f.size_bytes:,} bytes)" for f in context.instructions)
        parts.append(f"instruction files {files}")
    if context.instructions_note:
        parts.append(context.instructions_note)
    if context.skills:
        names = [
            s.name + (" (built in)" if Path(s.location).is_relative_to(BUILTIN_SKILLS_DIR) else "")
            for s in context.skills
        ]
        more = len(names) - SHOWN_SKILLS
        shown = ", ".join(names[:SHOWN_SKILLS]) + (f" and {more} more" if more > 0 else "")
        parts.append(f"{'skill' if len(names) == 1 else 'skills'}: {shown}")
    return "context: " + "; ".join(parts) if parts else None


SHOWN_SKILLS = 8
"""How many skills the context line names (the others are counted)."""


def session_commands(
    root: Path, context: SessionContext | None, *, warn: Callable[[str], None] = lambda _l: None
) -> dict[str, Command]:
    """The `/name` commands of a session in `root`: the project's prompt files (only in a
    trusted project: `tether trust`), the user's, then the skills of `context`."""
    trusted = check_trust(root).trusted
    return load_commands(
        root,
        user_dir=user_config_dir(),
        project_trusted=trusted,
        skills=() if context is None else context.skills,
        warn=warn,
    )


def command_prompt(
    root: Path, context: SessionContext | None, text: str, *, warn: Callable[[str], None]
) -> tuple[str, Command | None]:
    """`text` as it is sent: the expanded prompt of the `/name args` command it is (with that
    command), else `text` itself (and None). The commands are `session_commands(root, context)`.

    Raises:
        ConfigError: an unknown or broken command (nothing is to be sent).
    """
    from tether.skills.commands import expand, resolve

    found = resolve(text, session_commands(root, context, warn=warn))
    if found is None:
        return text, None
    if isinstance(found, str):
        raise ConfigError(found)
    command, args = found
    return expand(command, args), command


def skill_policy(
    config: AgentConfig, root: Path, registry: ToolRegistry, context: SessionContext | None
) -> PathPolicy:
    """The path policy of `config.tools`, plus the skill folders `read` may open read-only
    when the `skill` tool is offered (never the home, config or data folder itself)."""
    policy = policy_for(config.tools, root)
    if context is None or not context.skills or registry.get(SKILL_TOOL) is None:
        return policy
    refused = [Path.home(), user_config_dir(), default_root().parent]
    return replace(policy, read_roots=skill_read_roots(context.skills, refused))


def subfolder_notes(
    config: AgentConfig, root: Path, context: SessionContext | None
) -> SubfolderInstructions | None:
    """The subfolder instruction files of a session with facts (None without: a library
    agent built without them gets none)."""
    if context is None or not config.context.instruction_files:
        return None
    return SubfolderInstructions(
        root,
        names=config.context.instruction_files,
        cap_bytes=config.context.instruction_max_bytes,
        home=Path.home(),
        user_dir=user_config_dir(),
        denied=read_denied(config, root),
    )


def mention_refusal(config: AgentConfig, root: Path) -> Callable[[str], str | None]:
    """Why a real path may not be attached by an `@path` word (`tether.agent.mentions`), or
    None: the instruction files' rule (`tether.prompt.gather.refusal`: tether's settings and
    credentials never, what the file tools' read deny list refuses)."""
    return refusal(user_config_dir(), denied=read_denied(config, root))


def read_denied(config: AgentConfig, root: Path) -> Callable[[str], str | None]:
    """The file tools' read deny list (`tools.deny_paths` with the built-in dotenv rules) as a
    test of one real path, for the instruction files and their imports: the matching rule or
    None. Paths are matched relative to the project root, and by their name alone."""
    policy = policy_for(config.tools, root)
    base = project_root(root)

    def denied(real: str) -> str | None:
        inside = Path(real).is_relative_to(base)
        rel = os.path.relpath(real, base) if inside else os.path.basename(real)
        return policy.denied((rel, os.path.basename(real)), write=False)

    return denied


def host_tools(tools: list[Tool], cfg: AgentConfig, host: Host) -> None:
    """Add what the host and the settings offer to `tools` (in place): `question` when the host
    can ask (`host.questions`), `web_fetch` unless `tools.web.fetch` is off; then check
    `tools.only` against them all.

    Raises:
        ConfigError: a `tools.only` name that is no tool (`build.check_only_tools`).
    """
    from tether.tools.builtin.question import question
    from tether.tools.builtin.web import web_fetch

    if host.questions is not None and not any(t.name == question.name for t in tools):
        tools.append(question)
    if cfg.tools.web.fetch and not any(t.name == web_fetch.name for t in tools):
        tools.append(web_fetch)
    build.check_only_tools(cfg.tools.only, tools)
