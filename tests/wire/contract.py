"""The wire-view contract as a checker (used by the property and case tests)."""

from __future__ import annotations

import itertools
import re

from tether.messages import (
    CompactSummaryBlock,
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
from tether.wire import MAX_ID_LENGTH, check_pairing
from tether.wire.reasoning import block_producer, issued_by_route

_ID = re.compile(r"[A-Za-z0-9_-]+")


def pairing_problems(view: tuple[Turn, ...]) -> list[str]:
    """The tool_use/tool_result adjacency contract, written here independently of
    `tether.wire.check_pairing` so the repair is not vetted only by its own module.

    System turns are separators: they never sit between a call and its results, and roles
    alternate across them (Anthropic lifts them into `system`; OpenAI accepts them anywhere).
    """
    problems: list[str] = []
    non_system = [(i, t) for i, t in enumerate(view) if t.role != "system"]
    if non_system and non_system[0][1].role != "user":
        problems.append("the first non-system turn is not a user turn")
    for (_, a), (j, b) in itertools.pairwise(non_system):
        if a.role == b.role and view[j - 1].role != "system":
            problems.append(f"turn {j}: adjacent {b.role} turns")
    for i, t in enumerate(view):
        texts = [b for b in t.content if isinstance(b, TextBlock)]
        if any(not b.text.strip() for b in texts):
            problems.append(f"turn {i}: blank text")
        if t.role != "system" and not t.content:
            problems.append(f"turn {i}: empty turn")
        results = [b for b in t.content if isinstance(b, ToolResultBlock)]
        for r in results:
            if not any(not isinstance(p, TextBlock) or p.text.strip() for p in r.content):
                problems.append(f"turn {i}: empty result {r.tool_call_id}")
        calls = [b.id for b in t.content if isinstance(b, ToolCallBlock)]
        if calls:
            if t.role != "assistant":
                problems.append(f"turn {i}: calls in a {t.role} turn")
            nxt = view[i + 1] if i + 1 < len(view) else None
            got = (
                [b.tool_call_id for b in nxt.content if isinstance(b, ToolResultBlock)]
                if nxt
                else []
            )
            lead = list(nxt.content[: len(calls)]) if nxt else []
            if (
                nxt is None
                or nxt.role != "user"
                or got != calls
                or not all(isinstance(b, ToolResultBlock) for b in lead)
            ):
                problems.append(f"turn {i}: calls {calls} not answered in order right after")
        if results:
            prev = view[i - 1] if i > 0 else None
            asked = [c.id for c in prev.tool_calls] if prev and prev.role == "assistant" else []
            if t.role != "user" or [r.tool_call_id for r in results] != asked:
                problems.append(f"turn {i}: results do not answer the preceding calls")
    return problems


def view_problems(
    view: tuple[Turn, ...],
    target: Target,
    *,
    supports_prefill: bool = False,
    route: Provenance | None = None,
    vendor_endpoint: bool = False,
) -> list[str]:
    """Everything wrong with `view` as a request to `target` (empty list = valid).

    A compatible server (`vendor_endpoint` False) accepts the ids it issued, whatever their
    shape, also repeated in later turns (Kimi K2's `functions.<name>:<k>`); the vendor's own
    endpoint holds every id to the published rules."""
    problems = check_pairing(view) + pairing_problems(view)
    max_len = MAX_ID_LENGTH[target]
    charset = target in ("anthropic", "google")  # Anthropic's documented id pattern

    def native(t: Turn) -> bool:
        return (
            not vendor_endpoint
            and t.role == "assistant"
            and issued_by_route(t.provenance, target, route)
        )

    def id_ok(cid: str, t: Turn) -> bool:
        if not cid:
            return False
        if native(t):
            return True
        return len(cid) <= max_len and not (charset and not _ID.fullmatch(cid))

    answered: dict[str, bool] = {}
    call_ids: list[str] = []
    for idx, t in enumerate(view):
        prov = t.provenance
        seen_reasoning = False
        in_turn: set[str] = set()
        for k, b in enumerate(t.content):
            if isinstance(b, CompactSummaryBlock):
                problems.append(f"turn {idx}: a marker block reached the wire")
            elif isinstance(b, ServerToolBlock):
                # Written from the vendors' rules, not from tether.wire.server_tools: only
                # Anthropic takes server-tool blocks back, only its own, only whole (a
                # server_tool_use then the result naming it), only in an assistant turn.
                producer = b.producer or (prov.api if prov else None)
                raw_types = [r.get("type") for r in b.raw]
                whole = raw_types[:1] == ["server_tool_use"] and any(
                    r.get("tool_use_id") == b.raw[0].get("id") for r in b.raw[1:]
                )
                if target != "anthropic":
                    problems.append(f"turn {idx}: a server tool block sent to {target}")
                elif producer != "anthropic":
                    problems.append(f"turn {idx}: {producer} server tool block sent to Anthropic")
                elif not whole:
                    problems.append(f"turn {idx}: server_tool_use without its result")
                if t.role != "assistant":
                    problems.append(f"turn {idx}: a server tool block in a {t.role} turn")
            elif isinstance(b, ToolCallBlock):
                if not native(t) or b.id in in_turn:
                    call_ids.append(b.id)
                in_turn.add(b.id)
                answered[b.id] = id_ok(b.id, t)
                if not answered[b.id]:
                    problems.append(f"turn {idx}: call id {b.id!r} invalid for {target}")
                meta = b.provider_meta or {}
                if target == "openai-responses" and "item_id" in meta and not seen_reasoning:
                    problems.append(f"turn {idx}: server item id without its reasoning item")
            elif isinstance(b, ToolResultBlock):
                if not answered.get(b.tool_call_id, id_ok(b.tool_call_id, t)):
                    problems.append(f"turn {idx}: result id {b.tool_call_id!r} invalid")
            elif isinstance(b, RedactedThinkingBlock):
                if target != "anthropic":
                    problems.append(f"turn {idx}: redacted_thinking sent to {target}")
            elif isinstance(b, ThinkingBlock):
                producer = block_producer(b, prov)
                if target == "anthropic":
                    if producer not in (None, "anthropic"):
                        problems.append(f"turn {idx}: {producer} thinking sent to Anthropic")
                    if not b.signature:
                        problems.append(f"turn {idx}: unsigned thinking sent to Anthropic")
                    model = b.model or (prov.model if prov else None)
                    if route is not None and model is not None and model != route.model:
                        problems.append(
                            f"turn {idx}: thinking of model {model} sent to {route.model}"
                        )
                else:
                    if producer == "anthropic" and b.signature:
                        problems.append(f"turn {idx}: Anthropic-signed thinking sent to {target}")
                    if b.signature and not (target == "google" and producer == "google"):
                        problems.append(f"turn {idx}: foreign signature sent to {target}")
                    if b.item_id is not None or b.encrypted_content is not None:
                        if target != "openai-responses":
                            problems.append(f"turn {idx}: reasoning item sent to {target}")
                        else:
                            nxt = t.content[k + 1] if k + 1 < len(t.content) else None
                            ok = isinstance(nxt, ToolCallBlock) or (
                                isinstance(nxt, TextBlock) and nxt.text.strip() != ""
                            )
                            if not ok:
                                problems.append(f"turn {idx}: reasoning item without its follower")
                            seen_reasoning = True
    if len(set(call_ids)) != len(call_ids):
        problems.append("repeated tool-call ids in the view")
    if vendor_endpoint and any(len(c) > max_len for c in call_ids):
        problems.append(f"an id over {max_len} chars to the vendor's endpoint")
    if not supports_prefill:
        last = next((t for t in reversed(view) if t.role != "system"), None)
        if last is not None and last.role != "user":
            problems.append("the view ends with an assistant turn")
    return problems
