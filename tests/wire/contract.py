"""The wire-view contract as a checker (used by the property and case tests)."""

from __future__ import annotations

import re

from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    RedactedThinkingBlock,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire import MAX_ID_LENGTH, check_pairing
from tether.wire.reasoning import block_producer

_ID = re.compile(r"[A-Za-z0-9_-]+")


def view_problems(
    view: tuple[Turn, ...],
    target: Target,
    *,
    supports_prefill: bool = False,
    route: Provenance | None = None,
) -> list[str]:
    """Everything wrong with `view` as a request to `target` (empty list = valid)."""
    problems = check_pairing(view)
    max_len = MAX_ID_LENGTH[target]
    call_ids: list[str] = []
    for idx, t in enumerate(view):
        prov = t.provenance
        seen_reasoning = False
        for k, b in enumerate(t.content):
            if isinstance(b, CompactSummaryBlock):
                problems.append(f"turn {idx}: a marker block reached the wire")
            elif isinstance(b, ToolCallBlock):
                call_ids.append(b.id)
                if not (_ID.fullmatch(b.id) and len(b.id) <= max_len):
                    problems.append(f"turn {idx}: call id {b.id!r} invalid for {target}")
                meta = b.provider_meta or {}
                if target == "openai-responses" and "item_id" in meta and not seen_reasoning:
                    problems.append(f"turn {idx}: server item id without its reasoning item")
            elif isinstance(b, ToolResultBlock):
                if not (_ID.fullmatch(b.tool_call_id) and len(b.tool_call_id) <= max_len):
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
    if not supports_prefill:
        last = next((t for t in reversed(view) if t.role != "system"), None)
        if last is not None and last.role != "user":
            problems.append("the view ends with an assistant turn")
    return problems
