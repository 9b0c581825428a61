"""The `write` content trip-wire: a file whose content names an existing path outside the
project is asked about before it is written.

Owns: what "names" means (`named_paths`: the path-shaped words of the content, absolute, `~/…`
or `../…`, resolved against the working folder), which of them trip the wire
(`outside_paths`: those that exist and are outside the working folder, minus the system
locations programs name harmlessly, `LAX_PREFIXES`) and the one line the user and the model
read (`tripwire_reason`). A script that names `~/.ssh/config` or another project's files is the
case it catches: writing it is harmless, running it later is not.
Does not own: asking or refusing (`tether.agent.approval.ApprovalGate`: asked even in `auto`,
refused when no one can answer, an `allow` rule for the call lets it through).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

TRIPWIRE_TOOLS = frozenset({"write"})
"""The tools whose content is checked (the argument is `content`)."""

LAX_PREFIXES = ("/dev", "/proc", "/sys", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
"""System locations a file often names without meaning harm (`#!/usr/bin/env`, `/dev/null`):
paths under them never trip the wire."""

MAX_CANDIDATES = 200
"""At most this many distinct path-shaped words are looked up on disk per call."""

_WORD = re.compile(r"(?:~|\.\.)?/[^\s'\"`()<>\[\]{},;|&$*?!]*")
_TRAILING = ".:"


def named_paths(content: str) -> list[str]:
    """The path-shaped words of `content`, in order, each once: words starting with `/`,
    `~/` or `../` (a bare `/` is not one). Trailing `.` and `:` are dropped (prose)."""
    seen: dict[str, None] = {}
    for m in _WORD.finditer(content):
        start = m.start()
        if start > 0 and (content[start - 1].isalnum() or content[start - 1] in "._-~/:"):
            continue  # inside a word: `a/b`, `http://x`, `./x`
        word = m.group().rstrip(_TRAILING)
        if word in ("/", "~/", "../") or word.startswith("//"):
            continue
        seen.setdefault(word, None)
        if len(seen) >= MAX_CANDIDATES:
            break
    return list(seen)


def _lax(real: str) -> bool:
    return any(real == p or real.startswith(p + "/") for p in LAX_PREFIXES)


def outside_paths(content: str, root: str, *, home: str | None = None) -> list[str]:
    """The words of `content` (`named_paths`) that name an existing file or folder outside
    `root` (a real path), as written, in order. `home` expands `~` (default: `$HOME`)."""
    if not root:
        return []
    base = os.path.realpath(root)
    home_dir = home if home is not None else os.path.expanduser("~")
    found: list[str] = []
    for word in named_paths(content):
        if word.startswith("~/"):
            path = os.path.join(home_dir, word[2:])
        elif word.startswith("../"):
            path = os.path.join(base, word)
        else:
            path = word
        real = os.path.realpath(path)
        if real == base or real.startswith(base.rstrip("/") + "/") or _lax(real):
            continue
        if os.path.lexists(path):
            found.append(word)
    return found


def tripwire_reason(
    name: str, arguments: Mapping[str, object], root: str, *, home: str | None = None
) -> str | None:
    """None when a call of tool `name` does not trip the wire, else the one line saying why:
    its `content` names existing paths outside the project (the first three named, with the
    line of the first)."""
    if name not in TRIPWIRE_TOOLS:
        return None
    content = arguments.get("content")
    if not isinstance(content, str) or "/" not in content:
        return None
    found = outside_paths(content, root, home=home)
    if not found:
        return None
    first = found[0]
    line = next((ln.strip() for ln in content.splitlines() if first in ln), "")
    if len(line) > 120:
        line = line[:117] + "..."
    more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
    names = ", ".join(found[:3]) + more
    return (
        f"the content to write names {names}: existing path(s) outside the project (line: `{line}`)"
    )
