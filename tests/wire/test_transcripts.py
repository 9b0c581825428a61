"""Real stored sessions (Claude Code and Codex transcripts from tests/fixtures/transcripts)
converted to tether turns and sent through `build_view` for every target and through the
adapters' request conversion: the view meets the contract, nothing stored is lost from it, and
the stored turns are never changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from kit.cases import CASES_DIR
from tether.messages import (
    TARGETS,
    ContentBlock,
    Provenance,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.anthropic import to_anthropic_messages
from tether.providers.openai_chat_request import to_chat_messages
from tether.wire import build_view

from .contract import view_problems

TRANSCRIPTS = CASES_DIR.parent / "fixtures" / "transcripts"


def _cc_block(b: dict[str, Any]) -> ContentBlock | None:
    kind = b.get("type")
    if kind == "text":
        return TextBlock(text=b["text"])
    if kind == "thinking":
        return ThinkingBlock(text=b["thinking"], signature=b.get("signature"), producer="anthropic")
    if kind == "tool_use":
        return ToolCallBlock(id=b["id"], name=b["name"], arguments=b.get("input") or {})
    if kind == "tool_result":
        c = b.get("content")
        parts = cast("list[dict[str, Any]]", c or [])
        text = c if isinstance(c, str) else "".join(p.get("text", "") for p in parts)
        return ToolResultBlock(
            tool_call_id=b["tool_use_id"],
            content=(TextBlock(text=text),) if text else (),
            is_error=bool(b.get("is_error")),
        )
    return None


def claude_code_turns(path: Path) -> tuple[Turn, ...]:
    """One Claude Code JSONL line (one message, often one block) → one turn, in file order,
    sidechains included: the mess a resumed session can really hold."""
    turns: list[Turn] = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("type") not in ("user", "assistant"):
            continue
        msg = row["message"]
        raw = msg["content"]
        blocks = [TextBlock(text=raw)] if isinstance(raw, str) else [_cc_block(b) for b in raw]
        content = tuple(b for b in blocks if b is not None)
        prov = (
            Provenance(provider="anthropic", api="anthropic", model=msg.get("model", ""))
            if msg["role"] == "assistant"
            else None
        )
        turns.append(Turn(id=row["uuid"], role=msg["role"], content=content, provenance=prov))
    return tuple(turns)


def codex_turns(path: Path) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    for k, line in enumerate(path.read_text().splitlines()):
        row = json.loads(line)
        p: dict[str, Any] = row.get("payload") or {}
        if row["type"] == "response_item" and p.get("type") == "message":
            content: list[dict[str, Any]] = p["content"]
            text = "".join(c.get("text", "") for c in content)
            role = "assistant" if p["role"] == "assistant" else "user"
            turns.append(Turn(id=f"cx{k}", role=role, content=(TextBlock(text=text),)))
    return tuple(turns)


SESSIONS = {
    "claude-code-orchestrator-long": lambda: claude_code_turns(
        TRANSCRIPTS / "claude-code-orchestrator-long.jsonl"
    ),
    "claude-code-subagents-medium": lambda: claude_code_turns(
        TRANSCRIPTS / "claude-code-subagents-medium.jsonl"
    ),
    "codex-rollout-session-head": lambda: codex_turns(
        TRANSCRIPTS / "codex-rollout-session-head.jsonl"
    ),
}


@pytest.mark.parametrize("name", sorted(SESSIONS))
@pytest.mark.parametrize("target", TARGETS)
def test_real_sessions_give_valid_views_for_every_target(name: str, target: Target) -> None:
    stored = SESSIONS[name]()
    snapshot = repr(stored)
    assert len(stored) > 2
    view = build_view(stored, target)
    assert view_problems(view, target) == []
    assert build_view(view, target) == view
    assert repr(stored) == snapshot  # storage untouched
    # Nothing stored is lost: every stored call and every stored non-empty text survives.
    stored_calls = {c.name for t in stored for c in t.tool_calls}
    assert {c.name for t in view for c in t.tool_calls} == stored_calls
    n_calls = sum(len(t.tool_calls) for t in stored)
    assert sum(len(t.tool_calls) for t in view) == n_calls
    texts = "\n".join(b.text for t in view for b in t.content if isinstance(b, TextBlock))
    for t in stored:
        for b in t.content:
            if isinstance(b, TextBlock) and b.text.strip():
                assert b.text.strip()[:200] in texts
    if target == "anthropic":
        messages, _system = to_anthropic_messages(view)
        assert messages[-1]["role"] == "user"
        json.dumps(messages)
    elif target in ("openai-chat", "ollama"):
        chat = to_chat_messages(view, None)
        assert chat[-1]["role"] in ("user", "tool")
        json.dumps(chat)
