"""Tool folders: the user's own tools, one Python file each, found by scanning folders.

Owns: `scan_tool_folders` / `ToolFolders` (scan, collect, check names, `refresh`), and
`load_tool_file` (shared with the worker process, which imports the same file the same way).

Rules:
    * Only top-level `*.py` files of a folder are tool modules; names starting with `_` or `.`
      are skipped. Sub-folders hold the tool modules' private helpers.
    * Each folder is imported as its own synthetic package (`_tether_tools_<hash of the folder
      path>`), so a tool module imports its helpers relatively (`from .lib.util import f`,
      `from .common import g`) and two folders may both have a `lib/util.py`.
    * A module's tools are its `TOOLS` list when it has one (`Tool`s or plain typed functions),
      else every module-level `Tool` defined in that module (`@tool`-decorated functions; tools
      it merely imports are not collected). A top-level file without tools is a helper.
    * Collected tools get `Tool.source` = their file: they run in a worker process
      (`tether.tools.exec.worker`), not in this one.
    * A file that fails to import (syntax error, exception at import, a bad tool signature) is
      skipped and reported in `ToolFolders.problems`, naming the file; the others load.
    * A tool name defined twice (two files, one file, or a file and a built-in) raises
      `ToolConflictError` naming both places.

Does not own: running the tools (`tether.tools.exec.run`, `tether.tools.exec.worker`). Importing
a tool file runs its module code in this process (to read the schemas).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import cast

from tether.errors import ToolConflictError
from tether.tools.base import Tool, tool
from tether.tools.registry import ToolRegistry

BUILTIN = "built-in"
"""The origin label of tools passed as `base` (built-ins)."""


PROJECT_TOOL_FOLDER = Path(".tether") / "tools"
"""The project's tool folder, relative to the working folder (scanned when project tools are on)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolLoadProblem:
    """A tool file that could not be loaded (it was skipped).

    Attributes:
        file: the tool file.
        message: what went wrong (`ExcType: message`).
    """

    file: Path
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


def package_name(folder: Path) -> str:
    """The synthetic package name a tool folder is imported as (unique per real path)."""
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return f"_tether_tools_{digest}"


def _ensure_package(folder: Path) -> str:
    name = package_name(folder)
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[name] = pkg
    return name


def _purge(pkg: str) -> None:
    """Forget every imported module of the package `pkg` (the package itself is kept)."""
    for mod in [m for m in sys.modules if m.startswith(pkg + ".")]:
        del sys.modules[mod]
    importlib.invalidate_caches()


def tools_of(module: ModuleType) -> list[Tool]:
    """The tools a tool module defines (see the module docstring).

    Raises:
        TypeError: `TOOLS` holds something that is neither a Tool nor a function.
        ValueError: a function in `TOOLS` has an unsupported signature.
    """
    listed = getattr(module, "TOOLS", None)
    if listed is not None:
        out: list[Tool] = []
        for item in cast("Iterable[object]", listed):
            if isinstance(item, Tool):
                out.append(item)
            elif callable(item):
                out.append(tool(item))
            else:
                raise TypeError(f"TOOLS holds {item!r}, which is not a tool or a function")
        return out
    return [
        v
        for v in vars(module).values()
        if isinstance(v, Tool) and getattr(v.fn, "__module__", None) == module.__name__
    ]


def load_tool_file(file: Path) -> list[Tool]:
    """Import the tool file `file` (fresh) and return its tools, `source` set to `file`.

    Raises:
        Exception: whatever importing the file raises (SyntaxError, ImportError, ...).
    """
    file = Path(file).resolve()
    pkg = _ensure_package(file.parent)
    name = f"{pkg}.{file.stem}"
    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    return [replace(t, source=file) for t in tools_of(module)]


def tool_files(folder: Path) -> list[Path]:
    """The tool modules of `folder`: top-level `*.py` files not starting with `_` or `.`."""
    return sorted(
        p for p in folder.glob("*.py") if p.is_file() and not p.name.startswith(("_", "."))
    )


def _fingerprint(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """(relative path, mtime ns, size) of every .py file under `folder`, helpers included."""
    out: list[tuple[str, int, int]] = []
    for p in sorted(folder.rglob("*.py")):
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((str(p.relative_to(folder)), st.st_mtime_ns, st.st_size))
    return tuple(out)


class ToolFolders:
    """The tools of some tool folders, on top of `base` tools, in one `ToolRegistry`.

    Args:
        folders: the tool folders, in priority order (each must be a directory).
        base: tools offered first (e.g. `builtin_tools()`); a folder tool may not reuse a name.

    Attributes:
        registry: base tools, then each folder's tools (files sorted by name); updated in
            place by `refresh`, so an Agent holding it sees the change on its next run.
        problems: the files skipped at the last scan or refresh.

    Raises:
        NotADirectoryError: a folder is not a directory.
        ToolConflictError: a tool name is defined twice.
    """

    def __init__(self, folders: Sequence[str | Path], *, base: Iterable[Tool] = ()) -> None:
        self.folders = tuple(Path(f).resolve() for f in folders)
        for f in self.folders:
            if not f.is_dir():
                raise NotADirectoryError(f"tool folder is not a directory: {f}")
        self._base = tuple(base)
        self._prints: dict[Path, tuple[tuple[str, int, int], ...]] = {}
        self._loaded: dict[Path, list[Tool]] = {}
        self._problems: dict[Path, list[ToolLoadProblem]] = {}
        self.registry = ToolRegistry()
        for folder in self.folders:
            self._load_folder(folder)
        tools = self._check()
        for t in tools:
            self.registry.add(t)

    @property
    def problems(self) -> tuple[ToolLoadProblem, ...]:
        return tuple(p for f in self.folders for p in self._problems.get(f, ()))

    def _load_folder(self, folder: Path) -> None:
        pkg = _ensure_package(folder)
        _purge(pkg)
        self._prints[folder] = _fingerprint(folder)
        tools: list[Tool] = []
        problems: list[ToolLoadProblem] = []
        for file in tool_files(folder):
            try:
                tools.extend(load_tool_file(file))
            except (Exception, SystemExit) as e:
                sys.modules.pop(f"{pkg}.{file.stem}", None)
                msg = str(e)
                text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
                problems.append(ToolLoadProblem(file=file, message=text))
        self._loaded[folder] = tools
        self._problems[folder] = problems

    def _check(self) -> list[Tool]:
        """All tools in order; raises ToolConflictError on a repeated name."""
        seen: dict[str, str] = {}
        out: list[Tool] = []
        for t in (*self._base, *(t for f in self.folders for t in self._loaded[f])):
            where = str(t.source) if t.source is not None else BUILTIN
            if t.name in seen:
                raise ToolConflictError(
                    f"duplicate tool name {t.name!r}: defined in {seen[t.name]} and in {where}"
                )
            seen[t.name] = where
            out.append(t)
        return out

    def refresh(self) -> tuple[Path, ...]:
        """Re-import the tool files of every folder in which a `.py` file (helpers included)
        was added, removed or modified, and update `registry` in place.

        Returns:
            The folders that were re-imported.

        Raises:
            ToolConflictError: the new tools repeat a name (the registry is left as it was).
        """
        changed = tuple(f for f in self.folders if _fingerprint(f) != self._prints.get(f))
        if not changed:
            return ()
        old_loaded = dict(self._loaded)
        old_problems = dict(self._problems)
        for folder in changed:
            self._load_folder(folder)
        try:
            tools = self._check()
        except ToolConflictError:
            self._loaded, self._problems = old_loaded, old_problems
            for folder in changed:
                self._prints.pop(folder, None)  # re-check next time
            raise
        for name in self.registry.names():
            self.registry.remove(name)
        for t in tools:
            self.registry.add(t)
        return changed


def scan_tool_folders(folders: Sequence[str | Path], *, base: Iterable[Tool] = ()) -> ToolFolders:
    """Scan tool folders; see `ToolFolders` (same arguments, same errors)."""
    return ToolFolders(folders, base=base)
