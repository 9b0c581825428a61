"""Trust on first use for a project's settings and tool folders (containment: nothing a
cloned repository holds runs before the user allows it; like direnv's `allow`).

Owns: the approval store (`<user config dir>/trusted-projects.json`: per project real path, the
SHA-256 of every approved file), `project_files` (what needs approval), `check_trust` (what
changed since the approval) and `approve` (what `tether trust` does).
Does not own: loading settings (`tether.settings.files`), scanning tool folders
(`tether.tools.scan`), the command line (`tether.cli`).

What needs approval: every file under the project's `.tether/` folder (settings, tool modules,
command files, agent files, their helpers; `*.lock`, `*.tmp`, `__pycache__`, what tether writes there,
`jobs/archive/`, `jobs/runs/` and the `worktrees/` of `--worktree`, and the skills of `skills/`, text that loads without approval
like `AGENTS.md`, left out), Claude Code's agent files (`.claude/agents/*.md`) and every file under each tool folder that the
project's settings file names in `tools.folders`. Files a project has none of need no approval:
a project without `.tether/` runs as before, and a file that appears there later (planted by a
tool call of an earlier run, or pulled from a repository) is new, hence unapproved. A removed
file needs no approval (it takes nothing new into a run: a removed settings file leaves the
user's settings, which a refusal loads too; a removed tool, command or Jobs task file leaves
fewer, each of the rest as approved); `tether trust --show` still lists it.

A project's first run: nothing is approved yet, so a project that already has `.tether/` files
is refused until the user runs `tether trust` there (a cloned repository's tools and settings are
not run on sight). Refused means: tether loads neither the project settings file (but its
deny and ask rules, `RESTRICTIONS`: they only take away) nor the project's tool folders (the
user settings and built-in tools still load), and says so in one line on stderr and as a
`warning` event (`kind="untrusted_project"`).

The store lives in the user config folder, which no tool can write (the file tools are confined
to the working folder, and every OS sandbox hides that folder from commands): the only way to
approve is the user running `tether trust`.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

from tether.atomic import write_atomic
from tether.errors import ConfigError
from tether.settings.agent_files import AgentScope, agent_folders, merge_agents
from tether.settings.files import (
    PROJECT_DIR,
    SETTINGS_FILE,
    LoadedSettings,
    load_settings,
    settings_path,
    user_config_dir,
)
from tether.settings.model import AgentsSettings

TRUST_FILE = "trusted-projects.json"
CLAUDE_AGENTS = Path(".claude") / "agents"
"""Claude Code's project agent files (`*.md`): a system prompt and tools each, so approved
like the files of `.tether/` (`tether.settings.agent_files`)."""
_SKIP_SUFFIXES = (".lock", ".tmp", ".pyc")


def trust_path() -> Path:
    """The approval store: `<user config dir>/trusted-projects.json`."""
    return user_config_dir() / TRUST_FILE


def _project_tool_folders(root: Path) -> list[Path]:
    """The `tools.folders` the project's settings file names (read leniently: a malformed file
    names none; it is approved or refused as a file anyway)."""
    try:
        data = json.loads((root / PROJECT_DIR / SETTINGS_FILE).read_text(encoding="utf-8-sig"))
        folders = data["tools"]["folders"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return []
    if not isinstance(folders, list):
        return []
    return [root / str(f) for f in cast("list[Any]", folders)]


# Written by tether itself: completed run-once tasks and run records (`tether.jobs.folder`),
# and the git worktrees of `--worktree` (`tether.worktrees`: checkouts of the repository, whose
# own `.tether/` is checked when a run works in one; counting them here made one `-w` run that
# changed a file un-approve the project, its deny rules with it).
_TETHER_WRITTEN = (
    os.path.join("jobs", "archive"),
    os.path.join("jobs", "runs"),
    "worktrees",
)
# Text that loads without approval (Agent Skills, like instruction files): not the trust's.
_TEXT_ONLY = ("skills",)


def _files_under(folder: Path) -> Iterator[Path]:
    skip: set[str] = set()
    if folder.name == PROJECT_DIR:
        skip = {os.path.join(folder, d) for d in (*_TETHER_WRITTEN, *_TEXT_ONLY)}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(
            d for d in dirnames if d != "__pycache__" and os.path.join(dirpath, d) not in skip
        )
        for name in sorted(filenames):
            if not name.endswith(_SKIP_SUFFIXES):
                yield Path(dirpath, name)


def project_files(root: Path) -> dict[str, str]:
    """What needs approval in the project `root`: {name: SHA-256 hex} of every file under
    `root/.tether/` and the tool folders its settings name (names relative to `root` when
    inside it, else absolute). Empty for a project with none."""
    root = Path(os.path.realpath(root))
    out: dict[str, str] = {}
    for folder in (root / PROJECT_DIR, *_project_tool_folders(root), root / CLAUDE_AGENTS):
        if not folder.is_dir():
            continue
        found = sorted(folder.glob("*.md")) if folder == root / CLAUDE_AGENTS else _files_under(folder)
        for f in found:
            if not f.is_file():
                continue
            real = Path(os.path.realpath(f))
            name = str(real.relative_to(root)) if real.is_relative_to(root) else str(real)
            out[name] = _digest(real)
    return out


_DIGESTS: dict[str, tuple[tuple[int, ...], str]] = {}
_SETTLED_NS = 2_000_000_000
"""A file's digest is kept for its next check only once its status change time (which every
write sets to the kernel's clock, and no user call can set back) was this long before it was
read (git's rule for racy entries): a write in the same clock tick as the read cannot leave a
stale digest behind."""


def _digest(path: Path) -> str:
    """The SHA-256 hex of the file at `path` (or `unreadable`), from this process's memory
    when the file's status is unchanged since it was hashed (a long-lived Jobs worker checks
    the project before each run; a project holds many task files)."""
    try:
        st = path.stat()
    except OSError:
        return "unreadable"
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _DIGESTS.get(str(path))
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
    if time.time_ns() - st.st_ctime_ns > _SETTLED_NS:
        if len(_DIGESTS) > 10_000:
            _DIGESTS.clear()
        _DIGESTS[str(path)] = (stamp, digest)
    return digest


def _read_store() -> dict[str, Any]:
    try:
        data = json.loads(trust_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": 1, "projects": {}}
    if not isinstance(data, dict):
        return {"version": 1, "projects": {}}
    store = cast("dict[str, Any]", data)
    if not isinstance(store.get("projects"), dict):
        return {"version": 1, "projects": {}}
    return store


def approved_files(root: Path) -> dict[str, str]:
    """The files approved for `root` by the last `tether trust` ({} when never)."""
    projects = cast("dict[str, Any]", _read_store()["projects"])
    entry: Any = projects.get(os.path.realpath(root))
    if not isinstance(entry, dict):
        return {}
    files: Any = cast("dict[str, Any]", entry).get("files")
    return dict(cast("dict[str, str]", files)) if isinstance(files, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustState:
    """How a project's files compare with its approval.

    Attributes:
        root: the project (real path).
        changes: (name, `new` | `changed`) for each file that needs approval, sorted.
        approved: names whose content is as approved.
        removed: approved names that are gone (no approval needed), sorted.
    """

    root: Path
    changes: tuple[tuple[str, str], ...]
    approved: tuple[str, ...]
    removed: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        """True when nothing differs from the approval."""
        return not self.changes

    def message(self) -> str:
        """The one-line refusal (empty when trusted)."""
        if self.trusted:
            return ""
        listed = ", ".join(f"{name} ({what})" for name, what in self.changes[:5])
        more = f" and {len(self.changes) - 5} more" if len(self.changes) > 5 else ""
        return (
            f"project {self.root}: {listed}{more} not approved; its settings (but their deny "
            f"and ask rules), agent files and tool folders are not loaded (approve with "
            f"`tether trust` in "
            f"{self.root}; "
            "`tether trust --show` lists what would be approved)"
        )


def check_trust(root: Path) -> TrustState:
    """Compare the project's files with its approval (see the module docstring)."""
    root = Path(os.path.realpath(root))
    now = project_files(root)
    before = approved_files(root)
    changes: list[tuple[str, str]] = []
    for name, digest in now.items():
        if name not in before:
            changes.append((name, "new"))
        elif before[name] != digest:
            changes.append((name, "changed"))
    gone = tuple(sorted(name for name in before if name not in now))
    same = tuple(sorted(n for n, d in now.items() if before.get(n) == d))
    return TrustState(root=root, changes=tuple(sorted(changes)), approved=same, removed=gone)


def approve(root: Path) -> dict[str, str]:
    """Store the project's current files as approved (what `tether trust` does).

    Returns:
        The approved files ({name: SHA-256}).

    Raises:
        OSError: the store cannot be written.
    """
    root = Path(os.path.realpath(root))
    files = project_files(root)
    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=10):
        store = _read_store()
        store["projects"][str(root)] = {"files": files, "approved_ms": int(time.time() * 1000)}
        write_atomic(
            path, (json.dumps(store, indent=2, sort_keys=True) + "\n").encode(), mode=0o600
        )
    return files


@contextmanager
def keeping_approval(root: Path, *, enabled: bool = True) -> Generator[list[str]]:
    """Around a change tether makes to the project's `.tether/` files at the user's own
    command (`tether config set --project`, `tether mcp add|remove --project`): a project whose
    files were all approved before (or that had none) is approved again after, as `tether
    trust` would (the user made this change; without it the project's settings, deny rules
    and all, silently stopped loading). Yields a list that gets a note when the approval could
    not be updated (the change itself stands)."""
    was_trusted = enabled and check_trust(root).trusted
    notes: list[str] = []
    yield notes
    if was_trusted:
        try:
            approve(root)
        except OSError as exc:
            notes.append(f"note: the approval was not updated ({exc}); run `tether trust`")


RESTRICTIONS = (("permissions", "deny"), ("permissions", "ask"))
"""What an unapproved project's settings file still gives: its rules that only take away
(a call refused, or asked). Loading them can only make a run more careful, so a change
elsewhere in `.tether/` (a new task file, a planted helper) never disarms the deny rules the
user approved there."""


def restrictions(data: dict[str, Any]) -> dict[str, Any]:
    """The `RESTRICTIONS` of a settings file's object (lists only; anything else dropped)."""
    out: dict[str, Any] = {}
    for section, key in RESTRICTIONS:
        part = data.get(section)
        value = cast(dict[str, Any], part).get(key) if isinstance(part, dict) else None
        if isinstance(value, list):
            out.setdefault(section, {})[key] = value
    return out


def trusted_settings(root: Path) -> tuple[LoadedSettings, str | None]:
    """The settings for the project `root`: the user's and the project's files when the user
    approved the project's files as they are now (`tether trust`), else the user's with only
    the project file's restrictions (`RESTRICTIONS`), and the one-line reason (None: loaded
    as approved). An unapproved project file too malformed to read gives nothing. The agent
    files are added (`tether.settings.agent_files`): the user's, and the project's when it
    is approved.

    Raises:
        ConfigError: a settings file that is loaded is malformed or invalid.
    """
    trust = check_trust(root)
    user_dir, home = user_config_dir(), Path.home()
    if trust.trusted:
        return with_agent_files(load_settings(root), root, user_dir=user_dir, home=home), None
    try:
        loaded = load_settings(root, project_part=restrictions)
    except ConfigError:
        loaded = load_settings(None)
    return with_agent_files(loaded, None, user_dir=user_dir, home=home), trust.message()


def with_agent_files(
    loaded: LoadedSettings, root: Path | None, *, user_dir: Path, home: Path
) -> LoadedSettings:
    """`loaded` with the agent files added to `settings.agents.named` (`agents` and
    `warnings` filled in): the project's folders of `root` (None: none, for a project not
    trusted) and the user's."""
    project_file = None if root is None else settings_path("project", root)
    origin: dict[str, tuple[AgentScope, Path]] = {}
    for path, layer in zip(loaded.sources, loaded.layers, strict=True):
        scope: AgentScope = "project" if path == project_file else "user"
        for name in AgentsSettings.names_in(layer.get("agents")):
            origin[name] = (scope, path)  # the project's layer comes last and wins
    warnings: list[str] = []
    defs = merge_agents(
        loaded.settings.agents,
        origin,
        agent_folders(root, user_dir=user_dir, home=home),
        warnings.append,
    )
    named = {d.name: d.settings for d in defs}
    agents = loaded.settings.agents.model_copy(update={"named": named})
    return replace(
        loaded,
        settings=loaded.settings.model_copy(update={"agents": agents}),
        agents=tuple(defs),
        warnings=tuple(warnings),
    )
