"""Tool-call ids: persist-time re-minting and per-target sanitation in the wire view.

Owns: (a) `remint_tool_call_ids`, used by the agent loop before a new assistant turn is persisted
(NOT a wire pass); (b) `sanitize_tool_ids`, the third wire pass.
Does not own: minting ids a provider did not send (the assembler does, by stream index, see
`tether.providers.assemble`: streamed vLLM and Ollama calls may carry none).

(a) Persist time (parallel streamed calls sharing one id; claude-code#20693 "`tool_use` ids must be unique"): a call whose id
    is empty, was used earlier in the session, or repeats a sibling's id in the same turn gets
    `<id>_r<n>` (n = 1, 2, ... until unused), positionally (the first occurrence keeps its id);
    the provider's id is kept in `provider_meta["original_id"]`.
(b) Wire view: ids are rewritten only where the target's rules require it, the same way for a
    call and the results that answer it, deterministically and without collisions:

    ================  ===================================  ======================================
    target            accepted id                          source
    ================  ===================================  ======================================
    anthropic         1..64 chars of [A-Za-z0-9_-]         Messages API `tool_use.id` pattern
                                                           `^[a-zA-Z0-9_-]+$`
    openai-chat       any string of 1..40 chars            "Invalid 'messages[N].tool_calls[0].id':
                                                           string too long. Expected ... 40"; no
                                                           charset rule (servers such as vLLM
                                                           issue `functions.list_dir:0` and need
                                                           it echoed exactly)
    openai-responses  any string of 1..64 chars            "Invalid 'input[N].call_id': string too
                                                           long. Expected ... 64"
    google            1..64 chars of [A-Za-z0-9_-]         no documented rule; a portable choice
    ollama            any string of 1..64 chars            ids are not sent (`/api/chat` has none)
    ================  ===================================  ======================================

    The endpoint that issued an id gets it back verbatim: in a turn issued by the request's
    route (`issued_by_route`), each call goes out with the id the provider sent (its
    `provider_meta["original_id"]` when the persist-time re-minting changed it, else its stored
    id), whatever its length or characters and also when the same id came in an earlier turn
    (Kimi K2 numbers its calls `functions.<name>:<k>` and, served through OpenAI-compatible
    routes, repeats them across turns; it needs them echoed exactly, vybestack/llxprt-code#712,
    MoonshotAI/kimi-code#2503, sglang#9606); only a repeat inside one turn (the later of two
    sibling calls with one id) is renamed. Re-minting is for the other turns, whose ids the target must
    accept from a stranger, unique in the view. The exception is `vendor_endpoint`: the API
    vendor's own endpoint (api.openai.com, api.anthropic.com, Google's) holds every id to its
    published rules, the ones its route stored included (a route's name and model are the same
    after its base URL moved from a compatible server to the vendor: OpenAI then answers an id
    over 40 chars with HTTP 400). So the official OpenAI endpoint never gets an id over 40
    chars. Other ids are kept as they are when not yet used in the view and the target
    accepts them. Otherwise, for a charset-restricted target every character
    outside the charset becomes `_`; an empty id becomes `call`; an over-long id is cut and ends
    with `_` + 8 hex digits of its SHA-256; and an id already used by an earlier call gets
    `_<k>` (k = 2, 3, ...) within the target's limit. A result is renamed like the most recent
    earlier call with its (stored) id; when that call's turn repeats the id (legacy sessions),
    the n-th such result takes the n-th call's name (extra ones the last name, and the pairing
    pass drops them as duplicates); a result with no earlier call gets a fresh unused name so it
    cannot pair with another call by accident (the pairing pass then removes it). The pass walks
    the turns once, front to back, so the renaming of a prefix never depends on later turns.

    To `openai-responses`, the server item ids replayed with a request (`rs_…` reasoning items,
    `fc_…` in a call's `provider_meta["item_id"]`) must be unique too ("Duplicate item found
    with id rs_…"): a repeated reasoning item is dropped (the first is kept; it is the same
    item) and a repeated call item id is removed; a call then keeps its item id only when a kept
    reasoning item precedes it in its turn (`tether.wire.reasoning`'s adjacency rule).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Set
from dataclasses import replace
from typing import Any

from tether.messages import (
    ContentBlock,
    Provenance,
    Target,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire._util import map_turns, with_content
from tether.wire.reasoning import issued_by_route, responses_adjacency

CHARSET_RESTRICTED: frozenset[str] = frozenset({"anthropic", "google"})
"""The targets whose ids must match `[A-Za-z0-9_-]+` (see the module docstring)."""

MAX_ID_LENGTH: dict[str, int] = {
    "anthropic": 64,
    "openai-chat": 40,
    "openai-responses": 64,
    "google": 64,
    "ollama": 64,
}
"""The longest tool-call id each target accepts (see the module docstring)."""

_VALID = re.compile(r"[A-Za-z0-9_-]+")
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def tool_call_ids(turns: tuple[Turn, ...]) -> set[str]:
    """All tool-call ids used in `turns` (to seed the set `remint_tool_call_ids` reads)."""
    return {b.id for t in turns for b in t.content if type(b) is ToolCallBlock}


def remint_tool_call_ids(turn: Turn, used_ids: Set[str]) -> Turn:
    """Re-mint the colliding tool-call ids of a new assistant turn before it is persisted.

    Args:
        turn: the freshly assembled assistant turn.
        used_ids: every tool-call id already used in the session (the caller maintains it and
            adds the returned turn's ids after persisting). Not modified.

    Returns:
        `turn` itself when no id collides; otherwise a copy in which each colliding call (an
        empty id, an id in `used_ids`, or a repeat of an earlier sibling's id) has id
        `<id>_r<n>` with the smallest n making it unique against `used_ids`, the turn's ids
        and the new ids, and `provider_meta["original_id"]` = the provider's id.
        O(calls in the turn) set operations.
    """
    calls = [(k, b) for k, b in enumerate(turn.content) if type(b) is ToolCallBlock]
    if not calls:
        return turn
    originals = {b.id for _, b in calls}
    taken: set[str] = set()
    changes: dict[int, ToolCallBlock] = {}
    for k, b in calls:
        cid = b.id
        if cid and cid not in used_ids and cid not in taken:
            taken.add(cid)
            continue
        base = cid or "call"
        n = 1
        cand = f"{base}_r{n}"
        while cand in used_ids or cand in taken or cand in originals:
            n += 1
            cand = f"{base}_r{n}"
        taken.add(cand)
        meta: dict[str, Any] = dict(b.provider_meta or {})
        meta.setdefault("original_id", cid)
        changes[k] = replace(b, id=cand, provider_meta=meta)
    if not changes:
        return turn
    content = tuple(changes.get(k, b) for k, b in enumerate(turn.content))
    return with_content(turn, content)


def sanitize_id(raw: str, max_len: int, *, charset: bool = True) -> str:
    """Map `raw` into `[A-Za-z0-9_-]{1,max_len}` (with `charset=False`: any string of
    1..max_len chars) deterministically (no uniqueness)."""
    if 0 < len(raw) <= max_len and (not charset or _VALID.fullmatch(raw)):
        return raw
    s = (_INVALID.sub("_", raw) if charset else raw) or "call"
    if len(s) > max_len:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        s = s[: max_len - 9] + "_" + digest
    return s


class IdMapper:
    """The streaming state of `sanitize_tool_ids`: feed turns front to back with `turn()`.

    Args:
        target, route: as for `sanitize_tool_ids`.
        vendor_endpoint: the request goes to the API vendor's own endpoint, which holds every
            id to its published rules (no verbatim echo; module docstring).

    Attributes:
        max_len: the target's id length limit.
        used: every id assigned so far in the view.
        latest: stored call id -> the ids assigned to the calls with that stored id in the most
            recent turn holding one (several when a legacy turn repeats an id).
        answered: stored call id -> how many results with that id followed that turn.
    """

    __slots__ = (
        "answered",
        "charset",
        "echo",
        "item_ids",
        "latest",
        "max_len",
        "route",
        "target",
        "used",
    )

    def __init__(
        self, target: Target, route: Provenance | None = None, *, vendor_endpoint: bool = False
    ) -> None:
        self.target: Target = target
        self.route = route
        self.echo = not vendor_endpoint
        self.max_len = MAX_ID_LENGTH[target]
        self.charset = target in CHARSET_RESTRICTED
        self.used: set[str] = set()
        self.latest: dict[str, list[str]] = {}
        self.answered: dict[str, int] = {}
        self.item_ids: set[str] | None = set() if target == "openai-responses" else None

    def _fresh(self, raw: str) -> str:
        s = sanitize_id(raw, self.max_len, charset=self.charset)
        if s in self.used:
            k = 2
            while True:
                suffix = f"_{k}"
                cand = s[: self.max_len - len(suffix)] + suffix
                if cand not in self.used:
                    s = cand
                    break
                k += 1
        self.used.add(s)
        return s

    def _accepts(self, raw: str) -> bool:
        return 0 < len(raw) <= self.max_len and (not self.charset or bool(_VALID.fullmatch(raw)))

    def _echoed(self, turn: Turn) -> dict[int, str]:
        """Position of each call → the id its issuer sent, for a turn issued by the request's
        route (module docstring); empty otherwise. An id repeated inside the turn is echoed
        for its first call only (the others get unique names like any other): a rule that
        gives the same answer on the pass's own output, where the first call carries the id
        and the others their new names."""
        if not self.echo or turn.role != "assistant":
            return {}
        if not issued_by_route(turn.provenance, self.target, self.route):
            return {}
        issued: dict[int, str] = {}
        for k, b in enumerate(turn.content):
            if type(b) is ToolCallBlock:
                meta = b.provider_meta
                original = meta.get("original_id") if meta is not None else None
                issued[k] = original if isinstance(original, str) and original else b.id
        echoed: dict[int, str] = {}
        seen: set[str] = set()
        for k, cid in issued.items():
            if cid and cid not in seen:
                seen.add(cid)
                echoed[k] = cid
        return echoed

    def _unique_items(self, turn: Turn) -> Turn:
        """Drop repeated Responses server item ids (module docstring)."""
        seen = self.item_ids
        assert seen is not None
        out: list[ContentBlock] = []
        changed = False
        for b in turn.content:
            if type(b) is ThinkingBlock and b.item_id is not None:
                if b.item_id in seen:
                    changed = True
                    continue
                seen.add(b.item_id)
            elif type(b) is ToolCallBlock and b.provider_meta is not None:
                item_id = b.provider_meta.get("item_id")
                if isinstance(item_id, str):
                    if item_id in seen:
                        meta = {m: v for m, v in b.provider_meta.items() if m != "item_id"}
                        b = replace(b, provider_meta=meta or None)
                        changed = True
                    else:
                        seen.add(item_id)
            out.append(b)
        if not changed:
            return turn
        responses_adjacency(out)
        return with_content(turn, tuple(out))

    def turn(self, turn: Turn) -> Turn:
        """Rename the ids of one turn; returns `turn` itself when nothing changes."""
        if self.item_ids is not None and turn.role == "assistant":
            turn = self._unique_items(turn)
        new: list[ContentBlock] | None = None
        used = self.used
        latest = self.latest
        answered = self.answered
        content = turn.content
        in_turn: set[str] | None = None
        echoed: dict[int, str] | None = None
        for k, b in enumerate(content):
            if type(b) is ToolCallBlock:
                raw = b.id
                if in_turn is None:
                    in_turn = set()
                    echoed = self._echoed(turn)
                    # reserved before any call of the turn is named: a sibling renamed before
                    # the call that echoes an id must not be given that id
                    used.update(echoed.values())
                if raw not in in_turn:  # a new turn with this id: results now answer it
                    in_turn.add(raw)
                    latest[raw] = []
                    answered[raw] = 0
                assert echoed is not None
                issued = echoed.get(k)
                if issued is not None:  # back to its issuer verbatim, repeats included
                    used.add(issued)
                    latest[raw].append(issued)
                    if issued == raw:
                        continue
                    s = issued
                elif raw not in used and self._accepts(raw):
                    used.add(raw)
                    latest[raw].append(raw)
                    continue
                else:
                    s = self._fresh(raw)
                    latest[raw].append(s)
                nb: ContentBlock = replace(b, id=s)
            elif type(b) is ToolResultBlock:
                raw = b.tool_call_id
                names = latest.get(raw)
                if names:
                    n = answered[raw]
                    answered[raw] = n + 1
                    s = names[n] if n < len(names) else names[-1]
                else:
                    s = self._fresh(raw)
                if s == raw:
                    continue
                nb = replace(b, tool_call_id=s)
            else:
                continue
            if new is None:
                new = list(content)
            new[k] = nb
        if new is None:
            return turn
        return with_content(turn, tuple(new))


def sanitize_tool_ids(
    turns: tuple[Turn, ...],
    target: Target,
    *,
    route: Provenance | None = None,
    vendor_endpoint: bool = False,
) -> tuple[Turn, ...]:
    """Make every tool-call id acceptable to `target` and unique in the view (third wire pass),
    except that the route that issued an id gets it back verbatim (module docstring).

    Args:
        turns: the view so far, oldest first.
        target: the request's wire API (decides the id rules, module docstring table).
        route: the request's provider/api/model: calls in turns it issued go out with the ids
            it sent.
        vendor_endpoint: the request goes to the API vendor's own endpoint: every id is held
            to the published rules, its own route's too.

    Returns:
        The input tuple itself when every id is valid and unique; otherwise a new tuple where
        unchanged turns are the same objects. Calls and their results stay consistent.
    """
    return map_turns(turns, IdMapper(target, route, vendor_endpoint=vendor_endpoint).turn)
