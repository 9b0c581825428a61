"""Quick memory: a prompt `#text` (one line) appends `text` to an instruction file, the
project's (`AGENTS.md`, or the `CLAUDE.md` the project already has) or the user's (in tether's
config folder), picked in a small list; it is not sent to the model and is no turn.

The system prompt is fixed per session (its instruction files are read once, at the start), so
the line reaches the model from the next session on; the note says so.

Owns: `memory_targets` (where each scope's line goes), `append_line`, `quick_memory` (the
picker and the note), `memory_files` (the files `/memory` shows besides the loaded ones).
Does not own: loading instruction files (`tether.prompt.gather`), `/memory`
(`tether.tui.user_commands`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tether.prompt.gather import find_instruction_file, project_root
from tether.settings.files import user_config_dir
from tether.tui.pickers import Choice, PickerScreen

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.tui.host import AppHost

DEFAULT_NAME = "AGENTS.md"


def target_in(folder: Path, names: Sequence[str]) -> Path:
    """The instruction file of `folder` a line goes to: the first of `names` that exists, else
    a new file named `names[0]` (`AGENTS.md` without names)."""
    found = find_instruction_file(folder, names)
    return found if found is not None else folder / (names[0] if names else DEFAULT_NAME)


def memory_targets(root: Path, names: Sequence[str], user_dir: Path) -> dict[str, Path]:
    """`{"project": …, "user": …}`: the project root's instruction file and the user's."""
    return {
        "project": target_in(project_root(root), names),
        "user": target_in(user_dir, names),
    }


def append_line(path: Path, text: str) -> None:
    """Append `text` as a line of `path` (created, with its folder, when missing; a file not
    ending in a newline gets one first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as f:
        f.seek(0, 2)
        lead = b""
        if f.tell():
            f.seek(-1, 2)
            lead = b"" if f.read(1) == b"\n" else b"\n"
        f.write(lead + text.encode() + b"\n")


def _targets(agent: Agent) -> dict[str, Path]:
    return memory_targets(agent.root, agent.config.context.instruction_files, user_config_dir())


def memory_files(agent: Agent) -> list[Path]:
    """The quick memory files that exist now (`/memory` lists those not loaded at the start)."""
    return [p for p in _targets(agent).values() if p.is_file()]


def quick_memory(app: AppHost, text: str) -> None:
    """`#text`: ask where (project / user), append the line there, say where it went."""
    text = text.strip()
    if not text:
        app.note("usage: #text  (adds the line to AGENTS.md: project or user, picked next)")
        return
    targets = _targets(app.agent)
    choices = [
        Choice("project", f"project  {targets['project']}"),
        Choice("user", f"user     {targets['user']}"),
    ]

    def picked(scope: str | None) -> None:
        if scope is None:
            app.set_prompt(f"#{text}", keep_typed=True)
            app.note("# not saved (the line is back in the prompt)")
            return
        path = targets[scope]
        try:
            append_line(path, text)
        except OSError as exc:
            app.note(f"# not saved: {exc}")
            return
        app.note(
            f"added to {path} ({scope}); this session keeps the system prompt it started with, "
            "the next one (/new) reads it"
        )

    app.push_screen(PickerScreen(f"add to which instruction file?  {text}", choices), picked)
