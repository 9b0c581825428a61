"""The per-session read-state map: which file slices the model has read, and at which mtime and
size (`read.dedup`, the seed's `behavior.dedupReads`).

Owns: `ReadState` — after each successful `read` it records (path, slice) → (mtime, size, the
call); a later `read` of the same path and slice, with the file's mtime and size unchanged and
no `write`/`edit` of it in between, is an *unchanged re-read* (its id goes into `unchanged`,
which only grows). The wire view then sends that re-read as a short note pointing at the earlier
output — only while the earlier output is in the view word for word
(`tether.compaction.reads.ReadDedup`): the stored result keeps the full text, so when the
earlier read was pruned or compacted away, the full text goes out again. The map also tells
compaction's restoration which files were read last (`recent_paths`).
Reads and changes are recognized by `tether.compaction.reads.touched` (the stale-read notice's
own detection). I/O: one `stat` per successful read.
Does not own: running the tool, the wire view.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from tether.compaction.reads import FileRules, read_key, touched
from tether.messages import ToolCallBlock, ToolResultBlock, Turn


@dataclass(frozen=True, slots=True)
class ReadEntry:
    """One read slice: the file's mtime (ns) and size when it was read, and the call."""

    path: str
    mtime_ns: int
    size: int
    call_id: str


class ReadState:
    """The read-state map of one session.

    Args:
        rules: which tools read and change files, and the working folder.
        enabled: False records nothing (`read.dedup: false`): no re-read is deduplicated and
            restoration falls back to the history.
    """

    def __init__(self, rules: FileRules, *, enabled: bool = True) -> None:
        self.rules = rules
        self.enabled = enabled
        self._entries: dict[str, ReadEntry] = {}  # read_key -> entry (newest last)
        self._unchanged: set[str] = set()

    @property
    def unchanged(self) -> AbstractSet[str]:
        """Ids of read calls that re-read an unchanged slice (only grows; a live view, not a
        copy: the wire view asks it on every request)."""
        return self._unchanged

    def observe(self, call: ToolCallBlock, result: ToolResultBlock) -> None:
        """Learn from a call that ran (any tool), after it ran."""
        if not self.enabled:
            return
        read, written = touched(call, ok=not result.is_error, rules=self.rules)
        if written is not None:
            for key in [k for k, e in self._entries.items() if e.path == written]:
                del self._entries[key]
        key = read_key(call, self.rules) if read is not None else None
        if read is None or key is None:
            return
        try:
            st = os.stat(read)
        except OSError:
            self._entries.pop(key, None)
            return
        entry = ReadEntry(read, st.st_mtime_ns, st.st_size, call.id)
        before = self._entries.pop(key, None)
        if before is not None and (before.mtime_ns, before.size) == (entry.mtime_ns, entry.size):
            self._unchanged.add(call.id)
        self._entries[key] = entry

    def recent_paths(self, *, exclude: Sequence[Turn] = (), max_files: int = 5) -> tuple[str, ...]:
        """The paths read last, newest first, one per path, inside the working folder only,
        relative to it, none that a call in `exclude` (the turns a compaction kept) read: what
        restoration re-reads."""
        root = self.rules.root.rstrip("/") + "/"
        kept = {touched(c, ok=True, rules=self.rules)[0] for t in exclude for c in t.tool_calls}
        out: list[str] = []
        for e in reversed(self._entries.values()):
            if not e.path.startswith(root) or e.path in kept:
                continue
            rel = e.path[len(root) :]
            if rel not in out:
                out.append(rel)
            if len(out) >= max_files:
                break
        return tuple(out)
