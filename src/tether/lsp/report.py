"""What the model reads of a file's diagnostics: pure functions over plain data.

Owns: `Finding` (one diagnostic, positions 1-based in characters), `SEVERITIES`, which
findings are new since a baseline (`mark_new`: a multiset over severity, message, code and
source, so that lines moved by the edit do not make an old finding look new), the block put
in a `write` / `edit` result (`render_block`: severity filter, count and byte caps) and the
count the TUI shows (`block_count`, read back from a result's text).
Does not own: talking to servers (`tether.lsp.client`), when to ask (`tether.lsp.manager`).

The block, after the tool's own line:

    <diagnostics file="src/a.py" server="python" count="2" new="1">
    3:5 error: "foo" is not defined [reportUndefinedVariable] (basedpyright) (new)
    9:1 error: ...
    </diagnostics>

`new` is left out when the findings before the change are unknown (the server had not
answered for the old text in time).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

SEVERITIES = ("error", "warning", "information", "hint")
"""LSP's `DiagnosticSeverity` 1-4, by name (`lsp.severity` names the least severe shown)."""
MAX_MESSAGE_CHARS = 400
"""A longer diagnostic message is cut (characters)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One diagnostic.

    Attributes:
        line: 1-based line.
        column: 1-based column, in characters.
        severity: 1 error, 2 warning, 3 information, 4 hint.
        message: the server's message.
        code: the rule or error code, or None.
        source: the tool that reported it (`basedpyright`, `Ruff`), or None.
    """

    line: int
    column: int
    severity: int
    message: str
    code: str | None = None
    source: str | None = None

    @property
    def key(self) -> tuple[int, str, str | None, str | None]:
        """What stays the same when the finding only moved: all but the position."""
        return (self.severity, self.message, self.code, self.source)


def severity_level(name: str) -> int:
    """The LSP severity number of `name` (`error` → 1 ... `hint` → 4)."""
    return SEVERITIES.index(name) + 1


def shown(found: Sequence[Finding], least: int) -> list[Finding]:
    """The findings at least as severe as `least` (1-4), by severity, then position."""
    kept = [f for f in found if f.severity <= least]
    return sorted(kept, key=lambda f: (f.severity, f.line, f.column))


def mark_new(found: Sequence[Finding], before: Sequence[Finding]) -> list[bool]:
    """For each of `found`, whether it is new: more findings of its key than `before` had
    (the earliest ones by position count as the old ones)."""
    left = Counter(f.key for f in before)
    out: list[bool] = []
    for f in found:
        if left[f.key] > 0:
            left[f.key] -= 1
            out.append(False)
        else:
            out.append(True)
    return out


def _line(f: Finding, new: bool) -> str:
    message = " / ".join(p.strip() for p in f.message.strip().splitlines() if p.strip())
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    code = f" [{f.code}]" if f.code else ""
    source = f" ({f.source})" if f.source else ""
    tail = " (new)" if new else ""
    return f"{f.line}:{f.column} {SEVERITIES[f.severity - 1]}: {message}{code}{source}{tail}"


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def render_block(
    file: str,
    server: str,
    found: Sequence[Finding],
    before: Sequence[Finding] | None,
    *,
    least: int = 1,
    max_count: int = 20,
    max_bytes: int = 4000,
) -> str | None:
    """The diagnostics block for `file` (module docstring), or None when there is nothing to
    say: no finding at least as severe as `least`, and none before either (a change that
    fixed every finding says so in an empty block).

    Args:
        file: the file as the model names it (relative to the working folder).
        server: the server's settings name.
        found: the findings after the change.
        before: the findings before the change, or None when unknown.
        least: the least severe finding shown (1-4).
        max_count: the most finding lines.
        max_bytes: the most bytes of finding lines (UTF-8; the first line is always kept).
    """
    now = shown(found, least)
    old = None if before is None else shown(before, least)
    if not now and not old:
        return None
    flags = mark_new(now, old) if old is not None else [False] * len(now)
    # the new ones first when the caps cut: they are what the change did
    order = sorted(range(len(now)), key=lambda i: (not flags[i], now[i].severity))
    lines: list[str] = []
    size = 0
    for i in order[:max_count]:
        text = _line(now[i], flags[i])
        size += len(text.encode()) + 1
        if lines and size > max_bytes:
            break
        lines.append(text)
    if len(lines) < len(now):
        lines.append(f"… {len(now) - len(lines)} more not shown")
    new = "" if old is None else f' new="{sum(flags)}"'
    head = f'<diagnostics file="{_attr(file)}" server="{_attr(server)}" count="{len(now)}"{new}>'
    if not now:
        lines.append(f"no {SEVERITIES[least - 1]}-level findings left ({len(old or ())} before)")
    return "\n".join([head, *lines, "</diagnostics>"])


_HEAD = re.compile(r'^<diagnostics file="[^"]*" server="[^"]*" count="(\d+)"(?: new="(\d+)")?>$', re.M)


def block_count(text: str) -> tuple[int, int | None] | None:
    """The count and new count (None when unknown) of the diagnostics block in a result's
    text, or None when it has none."""
    m = _HEAD.search(text)
    if m is None:
        return None
    return int(m.group(1)), None if m.group(2) is None else int(m.group(2))
