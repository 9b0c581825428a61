"""Which language servers an agent may start: the `lsp` settings over the built-in entries,
each command looked up in tether's own environment and then on PATH.

Owns: `ServerSpec` (one server as it will be started), `BUILTIN` (the default servers: Python
— basedpyright, else pylsp, else `ruff server` —, TypeScript/JavaScript, Go, Rust),
`resolve_servers` (settings → the specs whose command is found), `find_command`,
`project_root` (a file's root by the nearest root marker) and `language_id`.
Does not own: starting servers (`tether.lsp.client`), when they start (`tether.lsp.manager`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.settings.lsp import LspServerSettings, LspSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSpec:
    """One language server, ready to start.

    Attributes:
        name: its settings name (`python`, `go`, ...).
        command: the command line, the executable as an absolute path.
        extensions: the file name endings it serves, each with its dot (`.py`).
        root_markers: the files or folders that mark a project root for it.
        initialization: its `initializationOptions` (and `workspace/configuration` answers).
        env: variables set for it, over the tools' scrubbed environment.
    """

    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    root_markers: tuple[str, ...] = ()
    initialization: Mapping[str, Any] | None = None
    env: Mapping[str, str] = field(default_factory=lambda: {})

    @property
    def program(self) -> str:
        """The executable's file name (for messages)."""
        return os.path.basename(self.command[0])

    def serves(self, path: Path) -> bool:
        """Whether `path`'s name ends with one of `extensions`."""
        return path.name.endswith(self.extensions)


@dataclass(frozen=True, slots=True, kw_only=True)
class Builtin:
    """A built-in server entry: the first command of `candidates` that is found is used."""

    candidates: tuple[tuple[str, ...], ...]
    extensions: tuple[str, ...]
    root_markers: tuple[str, ...]


_JS = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
BUILTIN: Mapping[str, Builtin] = {
    "python": Builtin(
        candidates=(("basedpyright-langserver", "--stdio"), ("pylsp",), ("ruff", "server")),
        extensions=(".py", ".pyi"),
        root_markers=(
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "pyrightconfig.json",
            "requirements.txt",
        ),
    ),
    "typescript": Builtin(
        candidates=(("typescript-language-server", "--stdio"),),
        extensions=_JS,
        root_markers=("tsconfig.json", "jsconfig.json", "package.json"),
    ),
    "go": Builtin(candidates=(("gopls",),), extensions=(".go",), root_markers=("go.work", "go.mod")),
    "rust": Builtin(
        candidates=(("rust-analyzer",),), extensions=(".rs",), root_markers=("Cargo.toml",)
    ),
}
"""The default servers, by settings name, each used only when one of its commands is found."""

_LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".go": "go",
    ".rs": "rust",
}


def language_id(path: Path, server: str) -> str:
    """The LSP `languageId` of `path` (from its extension; else the server's name)."""
    return _LANGUAGE_IDS.get(path.suffix, server)


def find_command(argv: Sequence[str], path: str | None) -> tuple[str, ...] | None:
    """`argv` with its executable found: an absolute path as is when it exists, else first in
    the folder of tether's own interpreter (its venv's `bin`), then on `path` (a PATH value;
    None: the process's). None when it is nowhere."""
    if not argv:
        return None
    first = argv[0]
    if "/" in first:
        found = first if os.access(first, os.X_OK) else None
    else:
        own = Path(sys.executable).parent / first
        found = str(own) if own.is_file() and os.access(own, os.X_OK) else None
        found = found or shutil.which(first, path=path)
    return None if found is None else (found, *argv[1:])


def _dotted(ext: str) -> str:
    return ext if ext.startswith(".") else f".{ext}"


def resolve_servers(
    settings: LspSettings, env: Mapping[str, str]
) -> tuple[tuple[ServerSpec, ...], tuple[str, ...]]:
    """The servers `settings` enable whose command is found, and one line per enabled entry
    of the user's own whose command is not (built-in ones that are not found are silently
    left out). A user entry named like a built-in one changes only the keys it sets; the
    user's new entries come first, so one of them serving an extension wins over a built-in.

    Args:
        settings: the `lsp` section.
        env: the environment whose PATH the commands are looked up on.
    """
    if not settings.enabled:
        return (), ()
    search = env.get("PATH", os.defpath)
    specs: list[ServerSpec] = []
    missing: list[str] = []
    own = [n for n in settings.servers if n not in BUILTIN]
    for name in (*own, *BUILTIN):
        entry = settings.servers.get(name, LspServerSettings())
        if not entry.enabled:
            continue
        base = BUILTIN.get(name)
        if entry.command is not None:
            command = find_command(entry.command, search)
            if command is None:
                missing.append(
                    f"language server `{name}` not started: `{entry.command[0]}` is not found"
                )
                continue
        elif base is not None:
            command = next(
                (c for c in (find_command(a, search) for a in base.candidates) if c), None
            )
            if command is None:
                continue
        else:  # the schema allows it; an entry of a new name without a command is inert
            missing.append(f"language server `{name}` has no `command`; not started")
            continue
        extensions = entry.extensions if entry.extensions is not None else (
            base.extensions if base is not None else ()
        )
        if not extensions:
            missing.append(f"language server `{name}` has no `extensions`; not started")
            continue
        markers = entry.root_markers if entry.root_markers is not None else (
            base.root_markers if base is not None else ()
        )
        specs.append(
            ServerSpec(
                name=name,
                command=command,
                extensions=tuple(_dotted(e) for e in extensions),
                root_markers=tuple(markers),
                initialization=entry.initialization,
                env=dict(entry.env),
            )
        )
    return tuple(specs), tuple(missing)


def project_root(path: Path, top: Path, markers: Sequence[str]) -> Path:
    """The folder of `path`'s nearest root marker at or below `top` (walking up from the
    file's folder); `top` when there is none."""
    folder = path.parent
    while folder.is_relative_to(top):
        if any((folder / m).exists() for m in markers):
            return folder
        if folder == top:
            break
        folder = folder.parent
    return top
