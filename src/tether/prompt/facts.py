"""What the model is told about its session, as plain data: the environment, the instruction
files and the skills, gathered once at session start and stored with the session.

Owns: `GitFacts`, `Environment`, `InstructionFile`, `SkillEntry`, `SessionContext` and their
JSON codec (`SessionContext.to_json` / `from_json`: the `context` event of a session file, so
a resume renders the same system prompt byte for byte). Pure: no I/O, no clock.
Does not own: gathering the facts (`tether.prompt.gather`), rendering them
(`tether.prompt.system`), the session file (`tether.session`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

CONTEXT_EVENT = "context"
"""The session event holding a `SessionContext` (`SessionContext.to_json()` as its data)."""
CONTEXT_VERSION = 1

InstructionScope = Literal["user", "project", "subfolder"]
SkillSource = Literal["project", "user", "claude", "extension"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GitFacts:
    """The git repository the working folder is in.

    Attributes:
        root: the repository's top folder (absolute).
        branch: the checked-out branch; None when HEAD is detached.
        has_commits: False for a repository without commits yet.
        dirty: the work tree or the index differs from HEAD (untracked files count).
    """

    root: str
    branch: str | None
    has_commits: bool
    dirty: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """The facts of the environment block.

    Attributes:
        cwd: the working folder (absolute).
        platform: the OS, its release and the machine (`Linux 6.1.0 x86_64`).
        date: today's date at session start, ISO `YYYY-MM-DD`.
        git: the repository, or None outside one.
        git_note: why `git` is None (`not a git repository`, `git is not installed`).
        sandbox: the OS sandbox of tool commands: `bwrap`, `landlock` or `none`.
        network: whether sandboxed commands may use the network.
        approval: the approval mode at session start (`ask`, `auto-edit`, `read-only`, `auto`).
    """

    cwd: str
    platform: str
    date: str
    git: GitFacts | None = None
    git_note: str = "not a git repository"
    sandbox: str = "none"
    network: bool = False
    approval: str = "ask"


@dataclass(frozen=True, slots=True, kw_only=True)
class InstructionFile:
    """One instruction file as loaded (imports expanded, cut to the cap).

    Attributes:
        path: its absolute path.
        name: how it is shown: relative to the project (`AGENTS.md`, `api/AGENTS.md`), or
            `~/…` for the user's.
        scope: `user` (the user config folder), `project` (git root down to the working
            folder) or `subfolder` (added when the agent first touched its folder).
        sha256: hex digest of the file's bytes as read.
        size_bytes: the file's size in bytes.
        text: what the model is given (imports expanded; cut when over the cap).
        imports: the files its `@path` imports brought in (absolute paths).
    """

    path: str
    name: str
    scope: InstructionScope
    sha256: str
    size_bytes: int
    text: str
    imports: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillEntry:
    """One skill of the catalog as the system prompt lists it.

    Attributes:
        name: the skill's name (the folder's name).
        description: what it does and when to use it (≤ 1,024 characters).
        location: its `SKILL.md` (absolute path).
        source: where it was found: `project`, `user`, `claude` (`~/.claude/skills`) or
            `extension` (added by a library or by tether itself).
        argument_hint: shown beside the command in completion lists (frontmatter
            `argument-hint`), or "".
    """

    name: str
    description: str
    location: str
    source: SkillSource = "project"
    argument_hint: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionContext:
    """Everything the default system prompt is made of, taken once per session.

    Attributes:
        environment: the environment block's facts.
        instructions: the instruction files in order (user folder first, then the git root
            down to the working folder).
        instructions_note: what the size cap cut ("" when nothing was).
        skills: the skill catalog, in listing order.
        skills_budget_chars: the most characters the skills listing may take (about 2 % of
            the first model's window).
    """

    environment: Environment
    instructions: tuple[InstructionFile, ...] = ()
    instructions_note: str = ""
    skills: tuple[SkillEntry, ...] = ()
    skills_budget_chars: int = 8_000

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored as the `context` event's data."""
        env = self.environment
        return {
            "version": CONTEXT_VERSION,
            "environment": {
                "cwd": env.cwd,
                "platform": env.platform,
                "date": env.date,
                "git": None
                if env.git is None
                else {
                    "root": env.git.root,
                    "branch": env.git.branch,
                    "has_commits": env.git.has_commits,
                    "dirty": env.git.dirty,
                },
                "git_note": env.git_note,
                "sandbox": env.sandbox,
                "network": env.network,
                "approval": env.approval,
            },
            "instructions": [
                {
                    "path": f.path,
                    "name": f.name,
                    "scope": f.scope,
                    "sha256": f.sha256,
                    "bytes": f.size_bytes,
                    "text": f.text,
                    "imports": list(f.imports),
                }
                for f in self.instructions
            ],
            "instructions_note": self.instructions_note,
            "skills": [
                {
                    "name": s.name,
                    "description": s.description,
                    "location": s.location,
                    "source": s.source,
                    "argument_hint": s.argument_hint,
                }
                for s in self.skills
            ],
            "skills_budget_chars": self.skills_budget_chars,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionContext:
        """The context a `context` event stored.

        Raises:
            ValueError: the data is not a context this version reads (a missing or mistyped
                field).
        """
        try:
            env = cast(Mapping[str, Any], data["environment"])
            git = cast(Mapping[str, Any] | None, env.get("git"))
            return cls(
                environment=Environment(
                    cwd=str(env["cwd"]),
                    platform=str(env["platform"]),
                    date=str(env["date"]),
                    git=None
                    if git is None
                    else GitFacts(
                        root=str(git["root"]),
                        branch=None if git.get("branch") is None else str(git["branch"]),
                        has_commits=bool(git["has_commits"]),
                        dirty=bool(git["dirty"]),
                    ),
                    git_note=str(env.get("git_note", "")),
                    sandbox=str(env.get("sandbox", "none")),
                    network=bool(env.get("network", False)),
                    approval=str(env.get("approval", "ask")),
                ),
                instructions=tuple(
                    InstructionFile(
                        path=str(f["path"]),
                        name=str(f["name"]),
                        scope=f["scope"],
                        sha256=str(f["sha256"]),
                        size_bytes=int(f["bytes"]),
                        text=str(f["text"]),
                        imports=tuple(str(i) for i in f.get("imports", ())),
                    )
                    for f in cast(Sequence[Mapping[str, Any]], data.get("instructions", ()))
                ),
                instructions_note=str(data.get("instructions_note", "")),
                skills=tuple(
                    SkillEntry(
                        name=str(s["name"]),
                        description=str(s["description"]),
                        location=str(s["location"]),
                        source=s.get("source", "project"),
                        argument_hint=str(s.get("argument_hint", "")),
                    )
                    for s in cast(Sequence[Mapping[str, Any]], data.get("skills", ()))
                ),
                skills_budget_chars=int(data.get("skills_budget_chars", 8_000)),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a session context: {exc!r}") from None
