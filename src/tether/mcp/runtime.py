"""What a stdio MCP server needs to see inside the sandbox: its whole runtime, read-only.

Owns: `server_runtime` (the folders a server's command line runs from) and `stderr_tail`
(the last lines of a server's stderr log, for the message when it dies at start).
Does not own: starting servers (`tether.mcp.connection`), what the sandbox shows
(`tether.sandbox.config.SandboxConfig`).

The sandbox shows the file system read-only except the folders it replaces: /tmp (a private
one), /run (empty), tether's own folders (hidden). A server installed in one of those (a venv
in a temporary folder, a checkout under /tmp, a home folder under /tmp) must have its whole
runtime bound back, not only the folder of its command: `server_runtime` follows the command
(looked up on the server's PATH) to its real path and, from every file it reaches, the venv
root (the folder holding `pyvenv.cfg`) and the interpreter that venv links to (`home`, and the
real path of its `bin/python`), a script's `#!` interpreter (through `/usr/bin/env`), the
package folder of a file inside `node_modules` (the folder holding the outermost
`node_modules`), and for the launchers the caches they run packages from: `npx`/`npm` (npm's
cache, `npm_config_cache` or `~/.npm`) and `uvx`/`uv` (uv's cache, tools and interpreters:
`UV_CACHE_DIR`, `UV_TOOL_DIR`, `UV_PYTHON_INSTALL_DIR` or their XDG defaults). Only folders
inside a replaced folder are returned (the rest is visible already).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

MAX_HOPS = 16
"""Files followed from one command line (a launcher script, its interpreter, ...)."""

REPLACED = ("/tmp", "/run")
"""Where the sandbox shows something else than the file system (a private /tmp, an empty
/run): a runtime there must be bound back."""


def _venv_root(path: Path) -> Path | None:
    for folder in list(path.parents)[:4]:
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def _venv_home(venv: Path) -> list[Path]:
    """The base interpreter a venv links to: `home` (its `bin`) and that folder's prefix,
    and the real path of the venv's own `bin/python`."""
    out: list[Path] = []
    try:
        lines = (venv / "pyvenv.cfg").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("home", "base-executable", "executable"):
            p = Path(value.strip())
            home = p if key.strip() == "home" else p.parent
            out += [home, home.parent]
    for name in ("python", "python3"):
        exe = venv / "bin" / name
        if exe.exists():
            real = Path(os.path.realpath(exe))
            out += [real.parent, real.parent.parent]
    return out


def _shebang(path: Path, search: str | None) -> Path | None:
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(rest[0], path=search) if rest else None
        return Path(found) if found else None
    return Path(words[0])


def _node_package(path: Path) -> Path | None:
    parts = path.parts
    if "node_modules" not in parts:
        return None
    return Path(*parts[: parts.index("node_modules")])


def _launcher_caches(name: str, env: Mapping[str, str]) -> list[Path]:
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache")
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    if name in ("npx", "npm"):
        return [Path(env.get("npm_config_cache") or env.get("NPM_CONFIG_CACHE") or home / ".npm")]
    if name in ("uvx", "uv"):
        return [
            Path(env.get("UV_CACHE_DIR") or cache / "uv"),
            Path(env.get("UV_TOOL_DIR") or data / "uv" / "tools"),
            Path(env.get("UV_PYTHON_INSTALL_DIR") or data / "uv" / "python"),
        ]
    return []


def server_runtime(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path
) -> tuple[Path, ...]:
    """The folders inside /tmp or /run that a stdio server's command line runs from (module
    docstring), existing ones, outermost first and without duplicates or nesting.

    Args:
        argv: the server's command line (before the sandbox wraps it).
        env: the server's environment (its PATH finds the command; HOME and the launchers'
            variables find their caches).
        cwd: the server's working folder (a relative command is found from it).
    """
    search = env.get("PATH", os.defpath)
    found: list[Path] = []
    todo: list[Path] = []
    if argv:
        first = argv[0]
        if "/" in first:
            todo.append(cwd / first)
        elif (hit := shutil.which(first, path=search)) is not None:
            todo.append(Path(hit))
        found += _launcher_caches(os.path.basename(first), env)
    todo += [Path(a) for a in argv[1:] if a.startswith("/") and os.path.exists(a)]
    seen: set[Path] = set()
    hops = 0
    while todo and hops < MAX_HOPS:
        path = todo.pop(0)
        hops += 1
        if path in seen or not path.exists():
            continue
        seen.add(path)
        real = Path(os.path.realpath(path))
        for p in dict.fromkeys((path, real)):
            found.append(p if p.is_dir() else p.parent)
            venv = _venv_root(p)
            if venv is not None:
                found += [venv, *_venv_home(venv)]
            package = _node_package(p)
            if package is not None:
                found.append(package)
        if real.is_file():
            interpreter = _shebang(real, search)
            if interpreter is not None:
                todo.append(interpreter)
    return _outermost(p for p in found if _replaced(p) and p.exists())


def _replaced(path: Path) -> bool:
    real = os.path.realpath(path)
    return any(real == top or real.startswith(top + "/") for top in REPLACED) and real not in REPLACED


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    real = sorted({Path(os.path.realpath(p)) for p in paths}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for p in real:
        if not any(p.is_relative_to(o) for o in out):
            out.append(p)
    return tuple(out)


def stderr_tail(fd: int, start: int, lines: int = 5, limit: int = 2000) -> str:
    """The last `lines` non-empty lines written to the file `fd` (a server's stderr log) after
    byte `start`, at most `limit` characters (its end); empty when there are none."""
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, min(size - start, 1 << 20), max(start, size - (1 << 20)))
    except (OSError, ValueError):
        return ""
    kept = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-limit:]
