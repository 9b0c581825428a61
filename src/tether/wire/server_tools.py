"""The server-tool wire action: what happens to a stored server-side tool block (a web search
the provider ran) when it is replayed to a target.

Owns: the one decision per `ServerToolBlock` and target, between `keep` (sent back as the
provider's own blocks, verbatim) and `text` (replaced by a plain text block,
`[web search: QUERY → url1, url2]`), and the turn-level rewrite built on it
(`server_tool_turn`).
Does not own: how an adapter spells a kept block (`tether.providers.anthropic_request` sends
`raw`), storage (the block is stored whole by `tether.messages`' codec).

Rules (with their source):
    * To `anthropic`, a block produced by Anthropic (`producer`, else the turn's
      `provenance.api`) whose `raw` holds the `server_tool_use` block and its result: keep. The
      Messages API takes `server_tool_use` / `web_search_tool_result` blocks back in assistant
      content unchanged (Anthropic "Web search tool": "the response ... can be passed back as
      is", its `encrypted_content` is what lets later citations resolve; "pause_turn": "provide
      the response back as-is in a subsequent request").
    * A block without its result (a stream cut during the search) cannot be replayed (a
      `server_tool_use` without its `web_search_tool_result` is refused): text.
    * To every other target, and to `anthropic` for a block produced elsewhere (an OpenAI
      `web_search_call`): text. No other API accepts another vendor's server-tool items, and
      OpenAI Responses `web_search_call` items (requests are sent with `store=false`) would need
      their reasoning item beside them; the text keeps what was searched and found in the
      conversation, so a model switch loses nothing the model could read.
Pure: data in, data out; the input is never mutated.
"""

from __future__ import annotations

from typing import Literal

from tether.messages import ContentBlock, Provenance, ServerToolBlock, Target, TextBlock, Turn
from tether.wire._util import with_content

ServerToolAction = Literal["keep", "text"]

REPLAYABLE: frozenset[str] = frozenset({"anthropic"})
"""The targets that take their own server-tool blocks back verbatim."""


def block_producer(block: ServerToolBlock, provenance: Provenance | None) -> str | None:
    """The wire API that ran `block`: its `producer`, else the turn's `provenance.api`."""
    return block.producer or (provenance.api if provenance is not None else None)


def complete(block: ServerToolBlock) -> bool:
    """Whether `raw` holds the call and, after it, its result (Anthropic: a `server_tool_use`
    then a block whose `tool_use_id` is that call's id)."""
    raw = block.raw
    if len(raw) < 2 or raw[0].get("type") != "server_tool_use":
        return False
    call_id = raw[0].get("id")
    return any(r.get("tool_use_id") == call_id for r in raw[1:])


def server_tool_action(
    block: ServerToolBlock, target: Target, *, provenance: Provenance | None
) -> ServerToolAction:
    """`keep` or `text` for `block` sent to `target` (module docstring rules)."""
    if target in REPLAYABLE and block_producer(block, provenance) == target and complete(block):
        return "keep"
    return "text"


def as_text(block: ServerToolBlock) -> TextBlock:
    """The block as the plain text other targets get (`ServerToolBlock.summary`)."""
    return TextBlock(text=block.summary)


def server_tool_turn(turn: Turn, target: Target) -> Turn:
    """`turn` with each server-tool block kept or replaced by its text (`server_tool_action`);
    `turn` itself when nothing changes."""
    out: list[ContentBlock] = []
    changed = False
    for b in turn.content:
        if type(b) is ServerToolBlock and (
            server_tool_action(b, target, provenance=turn.provenance) == "text"
        ):
            out.append(as_text(b))
            changed = True
        else:
            out.append(b)
    return with_content(turn, tuple(out)) if changed else turn
