"""Gathering what the system prompt says, at session start: the edge where the disk, `git` and
the clock are read.

Owns: `environment` (platform, date, git repository / branch / dirty, from `git status`),
`project_root` (the git root above a folder, else the folder), `load_instructions` (the
instruction files from the user config folder, then from the project root down to the working
folder: first name found per folder, imports expanded, the total capped), `read_instruction`
(one file, by real path, only inside the allowed folders) and `SubfolderInstructions` (the
file of a subfolder the agent touches later, once, as a note after the tool's result).
Does not own: the data shapes (`tether.prompt.facts`), the pure passes
(`tether.prompt.imports`, `tether.prompt.system`), where the facts are stored (the session's
`context` event, `tether.agent.assembly.prompting`).

Trust: instruction files are text; they load without `tether trust`, as at every peer. Only
files inside the project and the user config folder are read (imports included), and never a
secret (`refusal`: from the config folder only Markdown and text, never its settings or
credentials; nowhere what the file tools' deny list refuses, dotenv files by default).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import tether.hostgit as hostgit
from tether.messages import CompactSummaryBlock, TextBlock, Turn
from tether.prompt.facts import Environment, GitFacts, InstructionFile, InstructionScope
from tether.prompt.imports import Refusal, apply_cap, expand_imports, is_within

MAX_FILE_BYTES = 1024 * 1024
"""An instruction file (or import) larger than this is not read (bytes)."""
GIT_TIMEOUT_S = 5.0


def platform_name() -> str:
    """`Linux 6.1.0-18-amd64 x86_64` (OS, release, machine)."""
    return " ".join(p for p in (platform.system(), platform.release(), platform.machine()) if p)


def git_facts(
    cwd: Path, *, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run
) -> tuple[GitFacts | None, str]:
    """The repository `cwd` is in, from `git rev-parse` and `git status --porcelain=v2
    --branch`, or (None, why): `not a git repository`, `git is not installed`, `git did not
    answer`. Never raises."""
    env = hostgit.env()

    def git(*args: str, overrides: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
        return run(
            hostgit.argv("git", "-C", str(cwd), *args, overrides=overrides),
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    try:
        top = git("rev-parse", "--show-toplevel", "--git-common-dir", "--git-dir")
        if top.returncode != 0:
            return None, "not a git repository"
        lines = top.stdout.splitlines()
        dirs = [cwd / d for d in lines[1:3]]  # relative ones are relative to cwd
        files = [dirs[0] / "config", dirs[1] / "config.worktree"] if len(dirs) == 2 else None
        status = git(
            "status", "--porcelain=v2", "--branch",
            overrides=hostgit.repo_overrides(cwd, config_files=files),
        )
    except FileNotFoundError:
        return None, "git is not installed"
    except (OSError, subprocess.SubprocessError):
        return None, "git did not answer"
    branch: str | None = None
    has_commits = True
    dirty = False
    for line in status.stdout.splitlines():
        if line.startswith("# branch.oid "):
            has_commits = line.removeprefix("# branch.oid ").strip() != "(initial)"
        elif line.startswith("# branch.head "):
            head = line.removeprefix("# branch.head ").strip()
            branch = None if head == "(detached)" else head
        elif line and not line.startswith("#"):
            dirty = True
    return GitFacts(
        root=lines[0].strip(), branch=branch, has_commits=has_commits, dirty=dirty
    ), ""


def environment(
    cwd: Path,
    *,
    sandbox: str,
    network: bool,
    approval: str,
    today: Callable[[], date] = date.today,
) -> Environment:
    """The environment facts of a session starting now in `cwd` (runs `git`; never raises)."""
    git, note = git_facts(cwd)
    return Environment(
        cwd=str(cwd),
        platform=platform_name(),
        date=today().isoformat(),
        git=git,
        git_note=note,
        sandbox=sandbox,
        network=network,
        approval=approval,
    )


def project_root(cwd: Path) -> Path:
    """The nearest folder at or above `cwd` holding `.git` (a folder or a worktree's file),
    else `cwd` itself."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def folders_down(root: Path, cwd: Path) -> list[Path]:
    """`root`, then each folder below it down to `cwd` (just `[cwd]` when `cwd` is not below
    `root`)."""
    try:
        rel = cwd.relative_to(root)
    except ValueError:
        return [cwd]
    out = [root]
    for part in rel.parts:
        out.append(out[-1] / part)
    return out


def find_instruction_file(folder: Path, names: Sequence[str]) -> Path | None:
    """The first of `names` that is a regular file in `folder`, or None."""
    for name in names:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


CONFIG_TEXT_SUFFIXES = (".md", ".markdown", ".txt")
"""The only files an instruction file may import from tether's config folder: its settings,
credentials and key bindings live there too, and are never part of a prompt."""

Denied = Callable[[str], "str | None"]
"""The file tools' read deny list for one real path (`tools.deny_read`: dotenv files by
default): the matching rule, or None."""


def refusal(user_dir: Path, names: Sequence[str] = (), denied: Denied | None = None) -> Refusal:
    """Why a file may not be read as instructions or imported, judged by its real path (a
    symlink to a secret is the secret): in tether's config folder `user_dir`, anything but
    Markdown or text (`CONFIG_TEXT_SUFFIXES`, or an instruction file name); anywhere, what
    the file tools' deny list refuses (`denied`)."""
    config = _real(user_dir)

    def why(path: str) -> str | None:
        real = os.path.realpath(path)
        base = os.path.basename(real)
        if is_within(real, [config]) and not (
            base.lower().endswith(CONFIG_TEXT_SUFFIXES) or base in names
        ):
            return (
                "tether's config folder gives only Markdown and text files (its settings and "
                "credentials are never imported)"
            )
        hit = None if denied is None else denied(real)
        if hit is not None:
            return f"the file tools' deny list refuses it ({hit})"
        return None

    return why


def read_instruction(
    path: str, allowed: Sequence[str], refuse: Refusal | None = None
) -> bytes | None:
    """The bytes of `path` when its real path is inside `allowed` (real paths), `refuse` has
    nothing against it, it is a regular file and at most `MAX_FILE_BYTES`; else None."""
    real = os.path.realpath(path)
    if not is_within(real, allowed) or (refuse is not None and refuse(real) is not None):
        return None
    try:
        with open(real, "rb") as f:
            if not os.path.isfile(real) or os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                return None
            return f.read()
    except OSError:
        return None


def _text_reader(allowed: Sequence[str], refuse: Refusal) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        data = read_instruction(path, allowed, refuse)
        return None if data is None else data.decode("utf-8", errors="replace")

    return read


def display_name(path: Path, root: Path, home: Path) -> str:
    """`path` relative to the project `root`, else `~/…` under `home`, else absolute."""
    if path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    if path.is_relative_to(home):
        return "~/" + path.relative_to(home).as_posix()
    return str(path)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedInstructions:
    """The instruction files of a session.

    Attributes:
        files: the files in order (cut to the cap; a file left out is not listed).
        note: what the cap cut ("" when nothing).
        problems: one line per refused import.
        root: the project root (the git root, else the working folder).
    """

    files: tuple[InstructionFile, ...]
    note: str
    problems: tuple[str, ...]
    root: Path


def _real(path: Path) -> str:
    return os.path.realpath(path)


def load_instructions(
    cwd: Path,
    *,
    names: Sequence[str],
    user_dir: Path,
    home: Path,
    cap_bytes: int,
    denied: Denied | None = None,
) -> LoadedInstructions:
    """The instruction files for a session in `cwd` (see the module docstring): the user's
    (`user_dir`), then the project root's down to `cwd`'s; imports expanded (only from the
    project and `user_dir`, never a secret: `refusal`); the total cut to `cap_bytes`."""
    cwd = Path(_real(cwd))
    root = project_root(cwd)
    allowed = [_real(root), _real(user_dir)]
    refuse = refusal(user_dir, names, denied)
    found: list[tuple[Path, InstructionScope]] = []
    if names:
        user_file = find_instruction_file(user_dir, names)
        if user_file is not None:
            found.append((user_file, "user"))
        for folder in folders_down(root, cwd):
            f = find_instruction_file(folder, names)
            if f is not None:
                found.append((f, "project"))
    loaded: list[tuple[Path, InstructionScope, bytes, str, tuple[str, ...]]] = []
    problems: list[str] = []
    read = _text_reader(allowed, refuse)
    for path, scope in found:
        data = read_instruction(str(path), allowed, refuse)
        if data is None:
            continue
        expanded = expand_imports(
            data.decode("utf-8", errors="replace"),
            str(path),
            read,
            allowed=allowed,
            home=str(home),
            refuse=refuse,
        )
        problems += expanded.problems
        loaded.append((path, scope, data, expanded.text, expanded.imports))
    shown = [display_name(p, root, home) for p, *_ in loaded]
    capped = apply_cap(list(zip(shown, (t for *_, t, _i in loaded), strict=True)), cap_bytes)
    files = tuple(
        InstructionFile(
            path=str(path),
            name=name,
            scope=scope,
            sha256=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
            text=text,
            imports=imports,
        )
        for (path, scope, data, _t, imports), name, text in zip(
            loaded, shown, capped.texts, strict=True
        )
        if text
    )
    return LoadedInstructions(files=files, note=capped.note, problems=tuple(problems), root=root)


# -- subfolder instruction files ----------------------------------------------------------------

TOUCHING_TOOLS = frozenset({"read", "write", "edit", "ls", "glob", "grep"})
"""The tools whose `path` argument counts as touching a folder."""

SUBFOLDER_NOTE = (
    "Instruction file {name} (for work under {folder}/), read as you first worked there:"
)
_NOTE_RX = re.compile(r"^<system-reminder>\nInstruction file (\S+) \(for work under ")


class SubfolderInstructions:
    """The instruction files of folders below the working folder, added when the agent first
    touches the folder (a file tool's `path`), once: as a note after that call's result (a
    `<system-reminder>` block in the results turn), so the system prompt stays byte-stable.

    A note replaced by a compaction no longer counts: the file is added again the next time
    its folder is touched. On resume the notes already in the stored history count.

    Args:
        root: the working folder (real path).
        names: the instruction file names, in order of preference.
        cap_bytes: the most bytes of one file's text a note carries.
        home: the user's home folder (for `~/` imports).
        user_dir: the user config folder (imports may come from it).
        denied: the file tools' read deny list (`refusal`).
    """

    def __init__(
        self,
        root: Path,
        *,
        names: Sequence[str],
        cap_bytes: int,
        home: Path,
        user_dir: Path,
        denied: Denied | None = None,
    ) -> None:
        self.root = Path(_real(root))
        self.project = project_root(self.root)
        self.names = tuple(names)
        self.cap_bytes = cap_bytes
        self.home = home
        self.allowed = [_real(self.project), _real(user_dir)]
        self.refuse = refusal(user_dir, names, denied)
        self.added: set[str] = set()
        self._checked: set[str] = set()
        self._seen_turns = 0
        self._synced = False

    def _sync(self, history: Sequence[Turn]) -> None:
        """Follow the history: at the start and after a compaction, recount the notes still
        visible (those in turns no marker replaces)."""
        new = history[self._seen_turns :]
        first, self._synced = not self._synced, True
        self._seen_turns = len(history)
        if not first and not any(_is_marker(t) for t in new):
            return
        replaced = {
            i
            for t in history
            for b in t.content
            if isinstance(b, CompactSummaryBlock)
            for i in b.replaces_turn_ids
        }
        self.added = set()
        for t in history:
            if t.id in replaced or t.role != "user":
                continue
            for b in t.content:
                if isinstance(b, TextBlock) and (m := _NOTE_RX.match(b.text)):
                    self.added.add(m.group(1))
        self._checked = set()

    def notes_for(
        self, name: str, arguments: dict[str, object], history: Sequence[Turn]
    ) -> tuple[str, ...]:
        """The notes to add after a call of tool `name` with `arguments`: one per instruction
        file of a folder between the working folder (excluded) and the touched folder
        (included) not added yet, outermost first."""
        self._sync(history)
        path = arguments.get("path")
        if name not in TOUCHING_TOOLS or not isinstance(path, str) or not self.names:
            return ()
        target = Path(_real(self.root / path))
        if not target.is_dir():
            target = target.parent
        if target == self.root or not target.is_relative_to(self.root):
            return ()
        notes: list[str] = []
        for folder in folders_down(self.root, target)[1:]:
            key = str(folder)
            if key in self._checked:
                continue
            self._checked.add(key)
            found = find_instruction_file(folder, self.names)
            if found is None:
                continue
            shown = display_name(found, self.project, self.home)
            if shown in self.added:
                continue
            note = self._note(found, shown, folder)
            if note:
                self.added.add(shown)
                notes.append(note)
        return tuple(notes)

    def _note(self, path: Path, shown: str, folder: Path) -> str:
        data = read_instruction(str(path), self.allowed, self.refuse)
        if data is None:
            return ""
        expanded = expand_imports(
            data.decode("utf-8", errors="replace"),
            str(path),
            _text_reader(self.allowed, self.refuse),
            allowed=self.allowed,
            home=str(self.home),
            refuse=self.refuse,
        )
        capped = apply_cap([(shown, expanded.text)], self.cap_bytes)
        text = capped.texts[0].strip()
        if not text:
            return ""
        rel = display_name(folder, self.project, self.home)
        head = SUBFOLDER_NOTE.format(name=shown, folder=rel)
        cut = f"\n({capped.note})" if capped.note else ""
        return f"{head}\n{text}{cut}"


def _is_marker(turn: Turn) -> bool:
    return any(isinstance(b, CompactSummaryBlock) for b in turn.content)
