"""Which recently read files to restore after a compaction, and the synthetic pair (pure).

Owns: picking paths from the `read` tool's calls in the history (newest first, deduplicated by
path, only calls that succeeded, none already read in the kept tail) and building the ONE
synthetic call+result pair (an assistant turn with `read` tool_calls and a user turn with their
results): both turns or neither.
Does not own: reading the files (the driver runs the real `read` tool, so the working-folder
guard and deny policy apply) nor the token budget's accounting (the driver's).
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.messages import ToolCallBlock, ToolResultBlock, Turn

READ_TOOL = "read"


def recent_read_paths(
    history: Sequence[Turn], kept: Sequence[Turn], *, max_files: int = 5
) -> tuple[str, ...]:
    """Paths of successful `read` calls, newest first, deduplicated, not read in `kept`.

    A call failed when an error result for it comes later in `history` (results follow their
    calls). The walk goes from the newest turn back and stops once it has `max_files` paths,
    so a compaction, which runs it every time, reads the last rounds, not the whole history
    (a compaction's cost stays independent of the history's length)."""
    failed: set[str] = set()
    in_tail = {
        str(c.arguments.get("path")) for t in kept for c in t.tool_calls if c.name == READ_TOOL
    }
    out: list[str] = []
    for t in reversed(history):
        failed.update(r.tool_call_id for r in t.tool_results if r.is_error)
        for c in reversed(t.tool_calls):
            path = c.arguments.get("path")
            if (
                c.name != READ_TOOL
                or c.invalid
                or not isinstance(path, str)
                or c.id in failed
                or path in in_tail
                or path in out
            ):
                continue
            out.append(path)
            if len(out) >= max_files:
                return tuple(out)
    return tuple(out)


def restore_pair(
    calls: Sequence[ToolCallBlock],
    results: Sequence[ToolResultBlock],
    *,
    assistant_id: str,
    user_id: str,
) -> tuple[Turn, Turn] | None:
    """The synthetic pair, or None when there is nothing to restore.

    Raises:
        ValueError: `calls` and `results` do not answer each other one to one, in order.
    """
    if not calls:
        return None
    if [c.id for c in calls] != [r.tool_call_id for r in results]:
        raise ValueError("restore_pair: results must answer the calls one to one, in order")
    return (
        Turn(id=assistant_id, role="assistant", content=tuple(calls), stop_reason="tool_use"),
        Turn(id=user_id, role="user", content=tuple(results)),
    )
