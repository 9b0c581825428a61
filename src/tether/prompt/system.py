"""The system prompt, rendered from a session's facts. Pure: data in, text out.

Owns: tether's default prompt (`DEFAULT_PROMPT`: how tether's tools behave and what they
guarantee), the environment block, the instruction-files block, the skills listing and its
cap (`skills_listing`), the whole prompt (`system_prompt`: base, instructions, skills,
appended text, in that order) and the embedded model's compact form (`compact_prompt`).
Does not own: gathering the facts (`tether.prompt.gather`), choosing which form a provider gets
(`tether.agent.assembly.parts`).

Byte stability: the output depends only on the arguments (no clock, no environment reads), so
a session whose facts are stored renders the same bytes on every turn and after a resume.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tether.prompt.facts import Environment, InstructionFile, SessionContext, SkillEntry

DEFAULT_PROMPT = """\
You are tether, an agent that does software tasks for a user in a working folder, with the \
tools you are offered. Work until the task is done, then end with a short final answer: what \
you did or found (names, numbers, paths), not a plan. Instructions from the user, and from the \
instruction files below, come before these defaults.

# How to work
- Look before you act: read the files a change touches and search for the names it affects. \
Keep to the project's conventions; change only what the task needs.
- Change existing files with `edit` (an exact text that occurs once, unless `replace_all`); \
`write` replaces a whole file. Read a file before you edit it.
- Verify: run the tests or a command that shows the change works, when there is one. If you \
could not verify something, say so.
- Independent calls in one reply run in parallel. When a call fails, read the error and \
change the call: an identical call repeated many times is refused.
- Ask the user (the `question` tool, when offered) only about choices that are theirs; \
otherwise decide and say what you assumed.

# Tools and their limits
- Paths are relative to the working folder. The file tools (`read`, `write`, `edit`, `ls`, \
`glob`, `grep`) are confined to it; `.git/` and `.tether/` are read-only; `.env` files \
are not readable.
- Each `bash` call is a new `bash -c` process in the working folder: only files carry over \
between calls (write `cd dir && cmd`). stdin is empty, secret variables are removed, and \
what a call leaves running is killed when it ends. For a server or watcher that must keep \
running, set `run_in_background`; read it with `shell_output`, stop it with `shell_kill`. \
The time limit is 120 s by default (`timeout_s`; a longer one is cut to the configured \
ceiling, 20 min by default).
- A long result is saved to a file; you get a preview and the file's path. `read` the path \
(`offset`, `limit`) or `grep` it instead of running the command again.
- The conversation is stored append-only. When the context window fills, older turns are \
replaced by a summary that names the turns it covers; the `recall` tool (offered from then \
on) returns any of them word for word. Files you read recently are read again for you.
- Never print, copy or store secrets (keys, tokens, passwords)."""
"""tether's default prompt, before the environment block (about 500 tokens)."""

_SANDBOX = {
    "bwrap": "bubblewrap",
    "landlock": "Landlock",
}


def environment_block(env: Environment, extra_dirs: Sequence[tuple[str, bool]] = ()) -> str:
    """The `# Environment` block: folder, extra folders, platform, date, git, sandbox, network,
    approval."""
    lines = [
        "# Environment",
        f"- Working folder: {env.cwd}",
        *extra_dirs_lines(extra_dirs),
        f"- Platform: {env.platform}",
        f"- Date at session start: {env.date}",
        f"- Git: {git_line(env)}",
    ]
    kind = _SANDBOX.get(env.sandbox)
    if kind is None:
        lines.append(
            "- Sandbox: none available, so tether runs in safe mode: only read-only tools "
            "are offered."
        )
    else:
        lines.append(
            f"- Sandbox: {kind}. Commands may write only inside the working folder and a "
            "private /tmp; the rest of the file system is read-only, and tether's own "
            "folders (settings, sessions) are hidden."
        )
    lines.append(
        "- Network: on for commands."
        if env.network
        else "- Network: off: commands cannot reach the network (no downloads, no package "
        "installs from the internet); say so if a task needs it."
    )
    lines.append(f"- Approval mode at session start: {env.approval} ({_approval(env.approval)})")
    return "\n".join(lines)


def extra_dirs_lines(extra_dirs: Sequence[tuple[str, bool]]) -> list[str]:
    """The environment block's line for the extra folders (`--add-dir`), or none."""
    if not extra_dirs:
        return []
    shown = ", ".join(f"{d} ({'read-write' if w else 'read-only'})" for d, w in extra_dirs)
    return [f"- Extra folders (the tools may use them too; give absolute paths): {shown}"]


def git_line(env: Environment) -> str:
    """The git fact in one phrase: `repository at /r, branch main, uncommitted changes`."""
    git = env.git
    if git is None:
        return env.git_note or "not a git repository"
    if not git.has_commits:
        return f"repository at {git.root}, no commits yet"
    branch = f"branch {git.branch}" if git.branch else "detached HEAD"
    state = "uncommitted changes" if git.dirty else "clean"
    return f"repository at {git.root}, {branch}, {state}"


def _approval(mode: str) -> str:
    return {
        "ask": "the user approves each call that changes files or runs a command; a denied "
        "call returns an error with their reason: do not retry it unchanged",
        "auto-edit": "file edits run; the user approves commands and other calls",
        "read-only": "only read-only tools are offered",
        "auto": "calls run without asking; the sandbox still confines them",
    }.get(mode, "see the tools offered")


INSTRUCTIONS_HEADER = (
    "# Instruction files\n"
    "The user and the project keep instructions for agents in these files. Follow them; "
    "where they conflict, a file nearer the working folder wins."
)


def instructions_block(files: Sequence[InstructionFile], note: str = "") -> str:
    """The instruction files under one header, each as `## name` then its text ("" when
    there are none)."""
    if not files:
        return ""
    parts = [INSTRUCTIONS_HEADER]
    for f in files:
        label = " (user)" if f.scope == "user" else ""
        parts.append(f"## {f.name}{label}\n{f.text.strip()}")
    if note:
        parts.append(f"({note})")
    return "\n\n".join(parts)


SKILLS_HEADER = (
    "# Skills\n"
    "A skill is a folder of instructions (and scripts or references) for one kind of task. "
    "When a task matches a skill's description, call `skill` with its name before you start: "
    "it returns the instructions and lists the skill's files, which `read` can open."
)


def skill_line(s: SkillEntry) -> str:
    """One listing line: `- name: description (location)`."""
    return f"- {s.name}: {' '.join(s.description.split())} ({s.location})"


def skills_listing(
    skills: Sequence[SkillEntry], budget_chars: int
) -> tuple[tuple[SkillEntry, ...], int]:
    """The skills that fit the listing: in order, each line (`skill_line` plus a newline)
    while the running total stays within `budget_chars`; the rest are left out.

    Returns:
        (the listed skills, how many were left out); listed + left out = all of `skills`.
    """
    listed: list[SkillEntry] = []
    used = 0
    for s in skills:
        cost = len(skill_line(s)) + 1
        if used + cost > budget_chars:
            break
        listed.append(s)
        used += cost
    return tuple(listed), len(skills) - len(listed)


def skills_block(skills: Sequence[SkillEntry], budget_chars: int) -> str:
    """The skills listing under its header, capped (`skills_listing`) with a note of how many
    were left out ("" when there are no skills)."""
    if not skills:
        return ""
    listed, left = skills_listing(skills, budget_chars)
    lines = [SKILLS_HEADER, *(skill_line(s) for s in listed)]
    if left:
        lines.append(
            f"({left} more skill(s) not listed for space; `skill` with a name not listed "
            "returns every name)"
        )
    return "\n".join(lines)


OUTPUT_SCHEMA_BLOCK = (
    "Output format: this run's final answer (the reply after any tool calls you need) must be "
    "a single JSON value, with no other text and no code fence, that validates against this "
    "JSON Schema:\n{schema}"
)
"""The paragraph that gives the model `run.output_schema` up front (`output_schema_block`)."""


def output_schema_block(schema: Mapping[str, Any]) -> str:
    """The system-prompt paragraph naming the run's output schema (compact JSON), so the first
    request already asks for the shape the answer is validated against."""
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return OUTPUT_SCHEMA_BLOCK.format(schema=text)


def system_prompt(
    context: SessionContext | None,
    *,
    base: str | None = None,
    append: str | None = None,
    extra_dirs: Sequence[tuple[str, bool]] = (),
) -> str | None:
    """The system prompt: `base` (None: `DEFAULT_PROMPT` and the environment block, which
    lists `extra_dirs`: `(folder, writable)`, `tools.add_dirs`), then the instruction files,
    then the skills listing, then `append`; blocks are separated by a blank line. Without a
    `context`, only `base` and `append` (None when both are empty).
    """
    parts: list[str] = []
    if context is None:
        parts = [p for p in (base, append) if p]
        return "\n\n".join(parts) if parts else None
    default = f"{DEFAULT_PROMPT}\n\n{environment_block(context.environment, extra_dirs)}"
    parts.append(default if base is None else base)
    parts.append(instructions_block(context.instructions, context.instructions_note))
    parts.append(skills_block(context.skills, context.skills_budget_chars))
    parts.append(append or "")
    return "\n\n".join(p for p in parts if p) or None


COMPACT_INSTRUCTION_CHARS = 2_000
"""The most characters of instruction-file text the compact form carries (small windows)."""


def compact_prompt(
    context: SessionContext | None, *, base: str | None = None, append: str | None = None
) -> str | None:
    """The embedded model's form of the same facts: a few short lines (date, git, sandbox and
    network), the instruction files cut to `COMPACT_INSTRUCTION_CHARS`, the skill names; then
    `append`. A `base` replaces the facts lines, as it replaces the default prompt."""
    if context is None:
        parts = [p for p in (base, append) if p]
        return "\n\n".join(parts) if parts else None
    env = context.environment
    if base is None:
        net = "on" if env.network else "off"
        git = git_line(env)
        run = (
            f"Commands run in a sandbox; network {net}."
            if env.sandbox in _SANDBOX
            else "Only read-only tools run here."
        )
        parts = [f"Today is {env.date}. Git: {git}. {run}"]
    else:
        parts = [base]
    text = "\n\n".join(f.text.strip() for f in context.instructions if f.text.strip())
    if text:
        if len(text) > COMPACT_INSTRUCTION_CHARS:
            text = text[:COMPACT_INSTRUCTION_CHARS].rstrip() + "\n(cut)"
        parts.append("Project instructions:\n" + text)
    if context.skills:
        names = ", ".join(s.name for s in context.skills[:20])
        parts.append(f"Skills (call `skill` with a name for its instructions): {names}")
    if append:
        parts.append(append)
    return "\n\n".join(parts)
