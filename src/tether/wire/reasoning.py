"""The reasoning wire action: what happens to stored thinking when it is replayed to a target.

Owns: the ONE decision, per thinking / redacted_thinking block and target, between `keep`,
`drop` and `strip_signature` (`reasoning_action`), the turn-level rules built on it (OpenAI
Responses reasoning-item adjacency, provider-bound tool-call `provider_meta`), the public
`sanitize_history_for_provider` every adapter uses, and the one-shot recovery helper
`drop_earlier_thinking`.
Does not own: storage (thinking is stored byte-exact by `tether.messages`' codec, so a replayed
signature verifies), nor
how an adapter spells a kept block on the wire.

Shapes:
    reasoning_action(block, target, *, provenance, route) -> "keep" | "drop" | "strip_signature"
    sanitize_history_for_provider(turns: tuple[Turn, ...], target, *, route=None)
        -> tuple[Turn, ...]          # the same tuple when nothing changes

Terms:
    producer: `block.producer`, normalised (`gemini`/`vertex` -> `google`, `openai-*` ->
        `openai`); when the block is untagged, the family of the turn's `provenance.api`; None
        when neither is known (a legacy block).
    route: the request's `Provenance` (provider, api, model). A provider-bound artifact (a Gemini
        signature, an OpenAI Responses reasoning item, a tool call's `provider_meta`) is replayed
        only when the turn that carries it was *issued by that route*: its `provenance.api` is the
        target and, when a route is given, its provider and model equal the route's. Without a
        route the turn's api alone decides (the caller did not say which model it talks to).

Rules (with their source):
    To every target: thinking produced by Ollama is dropped (local-only, as the seed's Ollama
        contract has it: kept in the session, never sent back, to Ollama or any other provider).
    To `anthropic`:
        * redacted_thinking: keep (Anthropic requires it back verbatim), unless it comes from
          another Claude model than the route's (a model switch) or another producer.
        * thinking produced by OpenAI, Google or any other non-Anthropic producer: drop (its
          signature cannot verify; demoting it to text is refused too).
        * thinking without a signature: drop ("thinking.signature: Field required" after a model
          switch, or a stream cut before the signature arrived).
        * signed thinking from another model than the route's (a model switch): drop.
        * signed but untagged (legacy) thinking: keep.
    To `openai-chat`, `openai-responses`, `google`, `ollama`:
        * redacted_thinking: drop (only Anthropic can read it).
        * Anthropic-signed thinking: drop.
        * a Gemini-signed block: keep its signature only to `google` on the route that issued it.
        * an OpenAI Responses reasoning item (`item_id` / `encrypted_content`): kept only to
          `openai-responses` on the route that issued it and with its `encrypted_content`
          (needed for `store=false` replay); otherwise, to `openai-responses` it is omitted
          (it must not be split from its follower), to other targets its text survives.
        * any other or untagged signature: strip it; the text survives (a block left with no
          text and no summary is dropped).
    OpenAI Responses adjacency: a kept reasoning item must be immediately followed, in its
        turn, by an item it produced (a tool call or non-blank text), otherwise it is dropped;
        and a tool call keeps its server item id (`provider_meta["item_id"]`, e.g. `fc_1`) only
        when a kept reasoning item precedes it in its turn ("Item 'fc_...' of type
        'function_call' was provided without its required 'reasoning' item").
    Tool calls' `provider_meta` (e.g. a Gemini `thoughtSignature`) is kept only on the route that
        issued the turn; otherwise it is removed.
    Gemini signatures (a kept thinking block's, a call's `provider_meta["thought_signature"]`)
        to `google` must be base64 (the API's `thoughtSignature` is a bytes field); one that is
        not is dropped and reported as an `invalid_signature` repair, never sent.
Kept blocks are the stored objects themselves, in their stored order (byte-exact replay: signatures verify).
Server-side tool blocks (a provider's web search) go through `tether.wire.server_tools` first,
in the same per-turn pass (`reason_turn`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from typing import Any, Literal

from tether.messages import (
    ContentBlock,
    Provenance,
    RedactedThinkingBlock,
    ServerToolBlock,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire._util import blank, map_turns, with_content
from tether.wire.markers import without_thinking
from tether.wire.pairing import PLACEHOLDER_TEXT, RepairHook, Reporter
from tether.wire.server_tools import server_tool_turn

GEMINI_SIGNATURE_KEY = "thought_signature"
"""The `provider_meta` key of a Gemini function call's signature."""

ReasoningAction = Literal["keep", "drop", "strip_signature"]
"""What the wire does with one reasoning block."""

_API_FAMILY: dict[str, str] = {
    "anthropic": "anthropic",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "openai": "openai",
    "google": "google",
    "gemini": "google",
    "vertex": "google",
    "ollama": "ollama",
}


def producer_family(name: str | None) -> str | None:
    """Normalise a producer or api name (`openai-responses` -> `openai`, `gemini` -> `google`)."""
    if name is None:
        return None
    return _API_FAMILY.get(name, name)


def block_producer(
    block: ThinkingBlock | RedactedThinkingBlock, provenance: Provenance | None
) -> str | None:
    """The producer family of a reasoning block: its tag, else its turn's api family, else None."""
    if block.producer is not None:
        return producer_family(block.producer)
    if provenance is not None:
        return producer_family(provenance.api)
    return None


def issued_by_route(
    provenance: Provenance | None, target: Target, route: Provenance | None
) -> bool:
    """True when a turn with `provenance` was produced by the request's route on `target`.

    A turn without provenance was issued by no known route (False). Without a `route`, the
    turn's api being `target` is enough.
    """
    if provenance is None or provenance.api != target:
        return False
    if route is None:
        return True
    return provenance.provider == route.provider and provenance.model == route.model


def decode_gemini_signature(text: str) -> bytes | None:
    """The bytes of a Gemini `thoughtSignature` as stored (standard or URL-safe base64, padding
    optional), or None when `text` is empty or not base64.

    The Gemini API's `thoughtSignature` is a bytes field, sent as base64 text; a stored value
    that does not decode cannot be sent, so the wire drops it (reported) instead of failing the
    request.
    """
    if not text:
        return None
    padded = text + "=" * (-len(text) % 4)
    for altchars in (None, b"-_"):
        try:
            return base64.b64decode(padded, altchars=altchars, validate=True) or None
        except (binascii.Error, ValueError):
            continue
    return None


def reasoning_action(
    block: ThinkingBlock | RedactedThinkingBlock,
    target: Target,
    *,
    provenance: Provenance | None = None,
    route: Provenance | None = None,
) -> ReasoningAction:
    """Decide what the wire does with one thinking / redacted_thinking block.

    Args:
        block: the stored block.
        target: the wire API of the request.
        provenance: the provenance of the turn holding the block (None when unknown).
        route: the request's provider/api/model, or None when unknown.

    Returns:
        `keep` (replay the stored object), `drop` (omit it) or `strip_signature` (replay its
        text without signature, item id or encrypted content). See the module docstring for
        the rules and their sources.
    """
    producer = block_producer(block, provenance)
    if type(block) is RedactedThinkingBlock:
        if target != "anthropic" or producer not in (None, "anthropic"):
            return "drop"
        model = provenance.model if provenance is not None else None
        if route is not None and model is not None and route.model != model:
            return "drop"
        return "keep"
    assert type(block) is ThinkingBlock
    if producer == "ollama":
        return "drop"  # local-only: kept in the session, never sent to any provider
    signed = bool(block.signature)
    if target == "anthropic":
        if producer not in (None, "anthropic") or not signed:
            return "drop"
        model = block.model or (provenance.model if provenance is not None else None)
        if route is not None and model is not None and route.model != model:
            return "drop"
        return "keep"
    if producer == "anthropic" and signed:
        return "drop"
    is_item = block.item_id is not None or block.encrypted_content is not None
    if not signed and not is_item:
        return "keep"
    native = issued_by_route(provenance, target, route)
    if target == "google" and producer == "google" and native and not is_item:
        return "keep"
    if target == "openai-responses" and is_item:
        if producer == "openai" and native and block.item_id and block.encrypted_content:
            return "keep"
        return "drop"
    if not blank(block.text) or any(not blank(s) for s in block.summary):
        return "strip_signature"
    return "drop"


def _is_reasoning_item(b: ContentBlock) -> bool:
    return type(b) is ThinkingBlock and b.item_id is not None


def _is_follower(b: ContentBlock) -> bool:
    if type(b) is ToolCallBlock:
        return True
    return type(b) is TextBlock and not blank(b.text)


def _bad_signature(report: Reporter | None, turn: Turn, call_id: str | None) -> None:
    if report is not None:
        report(
            "invalid_signature",
            turn.id,
            call_id,
            "dropped a Gemini thought signature that is not base64 (it cannot be sent)",
        )


def reason_turn(
    turn: Turn, target: Target, route: Provenance | None = None, report: Reporter | None = None
) -> Turn:
    """Apply the reasoning wire action to one turn.

    Args:
        turn, target, route: as for `sanitize_history_for_provider`.
        report: receives an `invalid_signature` repair for each dropped Gemini signature.

    Returns:
        `turn` itself when nothing changes, else a copy with reasoning blocks dropped or
        stripped and tool calls' `provider_meta` filtered (module docstring rules).

    A Gemini signature that is not base64 is checked in two places, and handled apart for a
    reason: on a thinking block it is the block's whole point, so the block goes; on a tool
    call only the `provider_meta` key goes, the call itself must reach the wire (its result
    follows it).
    """
    content = turn.content
    types = set(map(type, content))
    if ServerToolBlock in types:  # the server-tool wire action rides on this per-turn pass
        turn = server_tool_turn(turn, target)
        content = turn.content
        types = set(map(type, content))
    if ThinkingBlock not in types and RedactedThinkingBlock not in types:
        if ToolCallBlock not in types:
            return turn
        for b in content:
            if type(b) is ToolCallBlock and b.provider_meta is not None:
                break
        else:
            return turn
    prov = turn.provenance
    native = issued_by_route(prov, target, route)
    kept: list[ContentBlock] = []
    changed = False
    for b in content:
        if type(b) is ThinkingBlock or type(b) is RedactedThinkingBlock:
            action = reasoning_action(b, target, provenance=prov, route=route)
            if action == "drop":
                changed = True
                continue
            if action == "strip_signature" and type(b) is ThinkingBlock:
                b = replace(b, signature=None, item_id=None, encrypted_content=None)
                changed = True
            elif (
                target == "google"
                and type(b) is ThinkingBlock
                and b.signature
                and decode_gemini_signature(b.signature) is None
            ):
                _bad_signature(report, turn, None)
                changed = True
                continue
        elif type(b) is ToolCallBlock and b.provider_meta is not None:
            if not native:
                b = replace(b, provider_meta=None)
                changed = True
            elif target == "google":
                sig = b.provider_meta.get(GEMINI_SIGNATURE_KEY)
                if sig is not None and (
                    not isinstance(sig, str) or decode_gemini_signature(sig) is None
                ):
                    _bad_signature(report, turn, b.id)
                    meta = {k: v for k, v in b.provider_meta.items() if k != GEMINI_SIGNATURE_KEY}
                    b = replace(b, provider_meta=meta or None)
                    changed = True
        kept.append(b)
    if target == "openai-responses":
        changed = responses_adjacency(kept) or changed
    if not changed:
        return turn
    return with_content(turn, tuple(kept))


def responses_adjacency(blocks: list[ContentBlock]) -> bool:
    """Enforce the Responses reasoning-item unit rule (module docstring) on one turn's blocks,
    in place; True when something changed."""
    changed = False
    if any(_is_reasoning_item(b) for b in blocks):
        nxt: ContentBlock | None = None
        for k in range(len(blocks) - 1, -1, -1):
            b = blocks[k]
            if _is_reasoning_item(b) and (nxt is None or not _is_follower(nxt)):
                del blocks[k]
                changed = True
                continue
            nxt = b
    seen_reasoning = False
    for k, b in enumerate(blocks):
        if _is_reasoning_item(b):
            seen_reasoning = True
        elif (
            type(b) is ToolCallBlock
            and not seen_reasoning
            and b.provider_meta is not None
            and "item_id" in b.provider_meta
        ):
            meta: dict[str, Any] = {k2: v for k2, v in b.provider_meta.items() if k2 != "item_id"}
            blocks[k] = replace(b, provider_meta=meta or None)
            changed = True
    return changed


def sanitize_history_for_provider(
    turns: tuple[Turn, ...],
    target: Target,
    *,
    route: Provenance | None = None,
    on_repair: RepairHook | None = None,
    strict: bool = False,
    placeholder: bool = True,
) -> tuple[Turn, ...]:
    """Apply the reasoning wire action to every turn (`reason_turn`).

    Args:
        turns: the history (any turns; only reasoning blocks and tool calls' `provider_meta`
            are looked at).
        target: the request's wire API.
        route: the request's provider/api/model; see `issued_by_route`.
        on_repair: called with an `invalid_signature` repair for each Gemini signature that is
            not base64 and is dropped (target `google`).
        strict: raise `tether.errors.WireError` instead of dropping such a signature.
        placeholder: a turn this pass empties (an assistant turn that held only thinking
            another provider cannot read) keeps the neutral marker the wire's pairing repair
            uses, one text block `(no content)` (`tether.wire.pairing.PLACEHOLDER_TEXT`), so
            role boundaries stay intact in a history a host stores (the seed's host-facing
            rule). False: such a turn stays empty; `build_view`'s second pass, whose pairing
            pass repairs it.

    Returns:
        The input tuple itself when nothing changes; otherwise a new tuple in which unchanged
        turns are the same objects.
    """
    report = Reporter(on_repair, strict) if on_repair is not None or strict else None
    if not placeholder:
        return map_turns(turns, lambda t: reason_turn(t, target, route, report))

    def one(t: Turn) -> Turn:
        out = reason_turn(t, target, route, report)
        if out is not t and not out.content:
            return with_content(out, (TextBlock(text=PLACEHOLDER_TEXT),))
        return out

    return map_turns(turns, one)


def drop_earlier_thinking(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """Recovery for a persistent "Invalid signature in thinking block" 400.

    Drops thinking and redacted_thinking blocks from every assistant turn except the last
    assistant turn when it holds tool calls (the in-progress tool loop, whose `[thinking,
    tool_use]` Anthropic requires intact). Use once, then surface the error if it persists.

    Returns:
        The input tuple when nothing changes, else a new tuple.
    """
    keep_idx = -1
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].role == "assistant":
            if turns[i].tool_calls:
                keep_idx = i
            break

    def strip(t: Turn) -> Turn:
        return without_thinking(t) if t.role == "assistant" else t

    if keep_idx < 0:
        return map_turns(turns, strip)
    # the kept turn is the last assistant turn: nothing after it changes
    head = turns[:keep_idx]
    new_head = map_turns(head, strip)
    return turns if new_head is head else (*new_head, *turns[keep_idx:])


def thinking_must_be_disabled(view: tuple[Turn, ...]) -> bool:
    """True when an Anthropic request with thinking enabled would be rejected (after a model
    switch dropped a tool loop's thinking).

    Anthropic requires, with thinking enabled, that the assistant turns of the in-progress tool
    loop start with a thinking or redacted_thinking block ("Expected `thinking` or
    `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant`
    message must start with a thinking block"; Anthropic "Extended thinking" guide, "Preserving
    thinking blocks": the whole tool loop counts as one assistant turn). The trailing tool loop
    is every turn after the last user turn that holds no tool result, system turns included
    (they are lifted into the `system` parameter, so they separate nothing on the wire). After
    a model switch a loop's thinking may have been dropped; the adapter must then send this
    request with thinking disabled.
    """
    in_loop = False
    for i in range(len(view) - 1, -1, -1):
        t = view[i]
        if t.role == "system":
            continue
        if t.role == "user":
            if any(type(b) is ToolResultBlock for b in t.content):
                in_loop = True
                continue
            return False
        if not t.tool_calls:
            return False
        if not in_loop:
            return False
        first = t.content[0] if t.content else None
        if type(first) is not ThinkingBlock and type(first) is not RedactedThinkingBlock:
            return True
    return False
