"""The providers' published request rules as pure checks of a built request payload.

Owns: one function per target taking the payload its adapter builds (the parameters its SDK
call would send: `anthropic_problems`, `chat_problems`, `responses_problems`,
`gemini_problems`, `ollama_problems`) and returning the problems the provider would reject it
for (an empty list = accepted), plus `conversation_problems`, tether's contract on every target:
a request holds at least one message, its first non-system message is the user's and its last
one is the user's (or a tool result), unless an assistant prefill is allowed.
Does not own: building the payloads (the providers' request builders), running them over a
session (`tether.replay`). Pure: data in, problems out; inputs are never mutated.

The checks are written from the providers' documentation and their published error messages,
not from tether's adapters, so that the adapters are not vetted by their own logic;
the rule each check encodes is quoted next to it. Sources: Anthropic "Messages" API reference
and the "Extended thinking", "Tool use" and "Prompt caching" guides; OpenAI "Chat Completions"
and "Responses" API references; Gemini API reference and the "Function calling" / "Thought
signatures" guides; Ollama API reference, "Generate a chat completion".
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any, cast

from tether.wire._util import blank

_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")  # "tool_use.id: String should match pattern"


def _items(value: Any) -> list[Any]:
    """A payload list that may be absent or null, as a list."""
    return list(value) if value else []


def _blank(text: object) -> bool:
    """True for a payload text that is absent, not a string, or blank (`_util.blank`)."""
    return not isinstance(text, str) or blank(text)


def conversation_problems(roles: Sequence[str], *, prefill: bool = False) -> list[str]:
    """tether's contract on the sequence of message roles (`tool` counts as the user's side)."""
    if not roles:
        return ["the request has no messages"]
    side = [r for r in roles if r not in ("system", "developer")]
    if not side:
        return ["the request has no user or assistant message"]
    problems: list[str] = []
    if side[0] not in ("user", "tool"):
        problems.append(f"the first message is {side[0]!r}, not the user's")
    if side[-1] not in ("user", "tool") and not prefill:
        problems.append(f"the last message is {side[-1]!r} and no prefill is allowed")
    return problems


# ---------------------------------------------------------------------------------------------
# Anthropic Messages API


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def anthropic_problems(
    messages: Sequence[Any],
    *,
    system: str | Sequence[Any] | None,
    tools: Sequence[Any] | None,
    thinking: dict[str, Any] | None,
    temperature: float | None,
    max_tokens: int,
    prefill_allowed: bool,
) -> list[str]:
    """Problems of a Messages API request (Anthropic "Messages" reference, "Extended thinking",
    "Tool use" and "Prompt caching" guides)."""
    problems: list[str] = []
    # "Consecutive user or assistant turns in your request will be combined into a single turn."
    merged: list[tuple[str, list[dict[str, Any]]]] = []
    for m in messages:
        role = m["role"]
        if role not in ("user", "assistant"):
            problems.append(f"invalid role {role!r}")
        blocks = _blocks(m["content"])
        if not blocks:
            problems.append(f"{role} message with empty content")
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, list(blocks)))
    problems += conversation_problems(
        [r for r, _ in merged], prefill=prefill_allowed and thinking is None
    )
    breakpoints = 0
    for t in tools or ():
        breakpoints += "cache_control" in t
    if isinstance(system, str):
        if _blank(system):
            problems.append("system: text content blocks must contain non-whitespace text")
        system = None
    for b in system or ():
        breakpoints += "cache_control" in b
        if _blank(b.get("text")):
            problems.append("system: text content blocks must contain non-whitespace text")
    seen_ids: set[str] = set()
    server_uses: set[Any] = set()
    for i, (role, blocks) in enumerate(merged):
        for b in blocks:
            kind = b.get("type")
            if "cache_control" in b:
                breakpoints += 1
                if kind in ("thinking", "redacted_thinking"):
                    problems.append(f"message {i}: cache_control on a {kind} block")
            if kind == "text" and _blank(b.get("text")):
                problems.append(
                    f"message {i}: text content blocks must contain non-whitespace text"
                )
            elif kind == "thinking":
                if role != "assistant":
                    problems.append(f"message {i}: thinking in a {role} message")
                if not b.get("signature"):
                    problems.append(f"message {i}: thinking.signature: Field required")
            elif kind == "redacted_thinking" and role != "assistant":
                problems.append(f"message {i}: redacted_thinking in a {role} message")
            elif kind == "tool_use":
                if role != "assistant":
                    problems.append(f"message {i}: tool_use in a {role} message")
                tid = b.get("id")
                if not isinstance(tid, str) or not _ANTHROPIC_ID.match(tid):
                    problems.append(f"message {i}: tool_use.id {tid!r} does not match the pattern")
                elif tid in seen_ids:
                    problems.append(f"message {i}: `tool_use` ids must be unique ({tid})")
                else:
                    seen_ids.add(tid)
                if not isinstance(b.get("input"), dict):
                    problems.append(f"message {i}: tool_use.input must be an object")
            elif kind == "tool_result":
                if role != "user":
                    problems.append(f"message {i}: tool_result in a {role} message")
                for part in b.get("content") or ():
                    if part.get("type") == "text" and _blank(part.get("text")):
                        problems.append(f"message {i}: empty text in a tool_result")
            elif kind in ("image", "document") and role != "user":
                problems.append(f"message {i}: {kind} in a {role} message")
            elif kind == "server_tool_use":
                # "Web search tool": server tool blocks are the assistant's, passed back as is.
                if role != "assistant":
                    problems.append(f"message {i}: server_tool_use in a {role} message")
                server_uses.add(b.get("id"))
            elif kind == "web_search_tool_result":
                if role != "assistant":
                    problems.append(f"message {i}: web_search_tool_result in a {role} message")
                if b.get("tool_use_id") not in server_uses:
                    problems.append(
                        f"message {i}: web_search_tool_result without its server_tool_use before it"
                    )
                content = b.get("content")
                if isinstance(content, list) and any(
                    not r.get("encrypted_content") for r in cast(list[dict[str, Any]], content)
                ):
                    problems.append(f"message {i}: web_search_result without encrypted_content")
        # "tool_use ids were found without tool_result blocks immediately after"; "each
        # tool_result block must have a corresponding tool_use block in the previous message";
        # tool guide: "tool_result blocks must come FIRST in the content array".
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if results:
            lead = [b.get("tool_use_id") for b in blocks[: len(results)]]
            if lead != results:
                problems.append(f"message {i}: tool_result blocks are not first")
            prev = merged[i - 1] if i > 0 else None
            asked = [b["id"] for b in prev[1] if b.get("type") == "tool_use"] if prev else []
            for r in results:
                if r not in asked:
                    problems.append(f"message {i}: unexpected `tool_use_id` {r!r} in tool_result")
            if len(set(results)) != len(results):
                problems.append(f"message {i}: two tool_result blocks for one tool_use")
        if uses:
            nxt = merged[i + 1] if i + 1 < len(merged) else None
            answered = {b.get("tool_use_id") for b in nxt[1]} if nxt and nxt[0] == "user" else set[Any]()
            missing = [u for u in uses if u not in answered]
            if missing:
                problems.append(f"message {i}: tool_use ids {missing} without tool_result after")
    if breakpoints > 4:
        problems.append(f"{breakpoints} cache_control blocks (at most 4)")
    if merged and merged[-1][0] == "assistant":
        last = merged[-1][1]
        if (
            last
            and last[-1].get("type") == "text"
            and last[-1]["text"] != last[-1]["text"].rstrip()
        ):
            problems.append("final assistant content cannot end with trailing whitespace")
        if last and last[-1].get("type") in ("thinking", "redacted_thinking"):
            # "messages.N: The final block in an assistant message cannot be `thinking`"
            # (HTTP 400, tailcallhq/forgecode#2107); redacted_thinking alike (issue 39)
            problems.append("The final block in an assistant message cannot be `thinking`")
    if thinking is not None:
        budget = thinking.get("budget_tokens", 0)
        if budget < 1024 or budget >= max_tokens:
            problems.append(f"thinking.budget_tokens {budget} out of [1024, max_tokens)")
        if temperature is not None:
            problems.append("temperature may not be set with thinking enabled")
        if merged and merged[-1][0] == "assistant":
            problems.append("assistant prefill with thinking enabled")
        # "When `thinking` is enabled, a final `assistant` message must start with a thinking
        # block"; the tool loop (assistant turns answered by tool results, back to the last
        # user message with anything but results) is one assistant turn.
        in_loop = False
        for role, blocks in reversed(merged):
            kinds = [b.get("type") for b in blocks]
            if role == "user":
                if "tool_result" not in kinds:
                    break
                in_loop = True
                continue
            if not in_loop or "tool_use" not in kinds:
                break
            if kinds[0] not in ("thinking", "redacted_thinking"):
                problems.append(
                    "Expected `thinking` or `redacted_thinking`, but found "
                    f"{kinds[0]!r}: a tool-loop assistant message must start with thinking"
                )
                break
    return problems


# ---------------------------------------------------------------------------------------------
# OpenAI Chat Completions


def chat_problems(messages: Sequence[Any], *, own_ids: frozenset[str] = frozenset()) -> list[str]:
    """Problems of a Chat Completions `messages` array (OpenAI API reference and its errors:
    "messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
    "An assistant message with 'tool_calls' must be followed by tool messages responding to
    each 'tool_call_id'", "Invalid 'messages[N].tool_calls[0].id': string too long. Expected a
    string with maximum length 40", "[] is too short - 'messages'"). `own_ids`: ids the
    server itself issued (an OpenAI-compatible server accepts its own ids, whatever their
    length, and may repeat them in a later message: Kimi K2 numbers its calls
    `functions.<name>:<k>` per turn)."""
    problems = conversation_problems([m.get("role", "") for m in messages])
    pending: set[str] = set()
    after_calls = False  # the previous message is an assistant with calls or a tool message
    ids: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"message {i}: invalid role {role!r}")
        if role == "tool":
            cid = m.get("tool_call_id")
            if not after_calls or cid not in pending:
                problems.append(f"message {i}: tool message {cid!r} answers no preceding call")
            pending.discard(cid)  # type: ignore[arg-type]
            if not isinstance(m.get("content"), str):
                problems.append(f"message {i}: tool content must be a string")
            continue
        if pending:
            problems.append(f"message {i}: calls {sorted(pending)} not answered before it")
            pending = set()
        after_calls = False
        content = m.get("content")
        if role == "assistant":
            calls = _items(m.get("tool_calls"))
            if content is None and not calls:
                problems.append(f"message {i}: assistant message without content or tool_calls")
            elif content is None:
                problems.append(
                    f"message {i}: assistant content is null beside tool_calls (OpenAI accepts "
                    'it, llama-cpp-python\'s server answers HTTP 500: send "")'
                )
            in_message: set[str] = set()
            for c in calls:
                cid = c.get("id")
                if not isinstance(cid, str) or not (1 <= len(cid) <= 40 or cid in own_ids):
                    problems.append(f"message {i}: tool_calls id {cid!r} invalid (1..40 chars)")
                elif cid in in_message or (cid in ids and cid not in own_ids):
                    problems.append(f"message {i}: duplicate tool call id {cid!r}")
                else:
                    ids.add(cid)
                    in_message.add(cid)
                    pending.add(cid)
                try:
                    args = json.loads(c["function"]["arguments"])
                except (KeyError, TypeError, ValueError):
                    problems.append(f"message {i}: arguments are not JSON text")
                else:
                    if not isinstance(args, dict):
                        problems.append(f"message {i}: arguments are not a JSON object")
                if not c.get("function", {}).get("name"):
                    problems.append(f"message {i}: a call without function name")
            after_calls = bool(calls)
        elif role == "user":
            if content is None or content == [] or content == "":
                problems.append(f"message {i}: empty user content")
        elif role in ("system", "developer") and not isinstance(content, str):
            problems.append(f"message {i}: system content must be a string")
    if pending:
        problems.append(f"calls {sorted(pending)} not answered at the end")
    return problems


# ---------------------------------------------------------------------------------------------
# OpenAI Responses


def responses_problems(params: dict[str, Any]) -> list[str]:
    """Problems of a stateless (`store: false`) Responses request (OpenAI Responses reference
    and its errors: "Duplicate item found with id rs_…", "Item 'rs_…' of type 'reasoning' was
    provided without its required following item", "Item 'fc_…' of type 'function_call' was
    provided without its required 'reasoning' item", "No tool call found for function call
    output with call_id …", "No tool output found for function call …", "Invalid
    'input[N].call_id': string too long. Expected ... 64")."""
    items: list[dict[str, Any]] = list(_items(params.get("input")))
    roles: list[str] = []
    for it in items:
        if it.get("type") == "function_call_output":
            roles.append("tool")
        elif it.get("type") in ("function_call", "reasoning"):
            roles.append("assistant")
        else:
            roles.append(str(it.get("role")))
    problems = conversation_problems(roles)
    item_ids: set[str] = set()
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for k, it in enumerate(items):
        kind = it.get("type")
        if "id" in it:
            iid = it["id"]
            if iid in item_ids:
                problems.append(f"input[{k}]: Duplicate item found with id {iid}")
            item_ids.add(iid)
        if kind == "reasoning":
            if not it.get("encrypted_content"):
                problems.append(f"input[{k}]: reasoning item without encrypted_content")
            nxt = items[k + 1] if k + 1 < len(items) else None
            ok = nxt is not None and (
                nxt.get("type") == "function_call"
                or (nxt.get("role") == "assistant" and nxt.get("type", "message") == "message")
            )
            if not ok:
                problems.append(f"input[{k}]: reasoning item without its required following item")
        elif kind == "function_call":
            cid = it.get("call_id")
            if not isinstance(cid, str) or not 1 <= len(cid) <= 64:
                problems.append(f"input[{k}]: call_id {cid!r} invalid (1..64 chars)")
            elif cid in calls:
                problems.append(f"input[{k}]: duplicate call_id {cid!r}")
            else:
                calls[cid] = k
            if not isinstance(it.get("arguments"), str):
                problems.append(f"input[{k}]: arguments must be a string")
            if "id" in it:
                # Its reasoning item comes earlier in the same assistant output (no user
                # message or tool output in between).
                j = k - 1
                while j >= 0 and items[j].get("type") != "reasoning" and roles[j] == "assistant":
                    j -= 1
                if j < 0 or items[j].get("type") != "reasoning":
                    problems.append(f"input[{k}]: function_call item without its reasoning item")
        elif kind == "function_call_output":
            cid = it.get("call_id")
            if cid not in calls:
                problems.append(f"input[{k}]: No tool call found for function call output {cid!r}")
            elif cid in answered:
                problems.append(f"input[{k}]: a second output for call {cid!r}")
            answered.add(cid)  # type: ignore[arg-type]
            if not isinstance(it.get("output"), str):
                problems.append(f"input[{k}]: output must be a string")
        else:
            content = it.get("content")
            if it.get("role") not in ("user", "assistant", "system", "developer"):
                problems.append(f"input[{k}]: invalid role {it.get('role')!r}")
            if content is None or content == [] or (isinstance(content, str) and not content):
                problems.append(f"input[{k}]: empty message content")
    for cid in calls:
        if cid not in answered:
            problems.append(f"No tool output found for function call {cid}")
    return problems


# ---------------------------------------------------------------------------------------------
# Gemini API


def _b64(text: object) -> bool:
    if not isinstance(text, str) or not text:
        return False
    try:
        base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        try:
            base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError):
            return False
    return True


def gemini_problems(contents: Sequence[dict[str, Any]]) -> list[str]:
    """Problems of Gemini `contents` in their JSON form (Gemini API reference and "Function
    calling" / "Thought signatures" guides: "Please ensure that function call turn comes
    immediately after a user turn or after a function response turn", "Please ensure that the
    number of function response parts is equal to the number of function call parts of the
    function call turn", "First content should be with role 'user'"; Gemini 3: "the first
    functionCall part in each step of the current turn must include its thought_signature",
    the current turn starting at the latest user content with standard content, not a
    functionResponse; `thoughtSignature` is a base64 bytes field)."""
    problems = conversation_problems([c.get("role", "") for c in contents])
    for k, c in enumerate(contents):
        role = c.get("role")
        parts: list[dict[str, Any]] = _items(c.get("parts"))
        if role not in ("user", "model"):
            problems.append(f"contents[{k}]: invalid role {role!r}")
        if not parts:
            problems.append(f"contents[{k}]: content without parts")
        if k and contents[k - 1].get("role") == role:
            problems.append(f"contents[{k}]: two adjacent {role} contents (roles must alternate)")
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        for p in parts:
            if "thoughtSignature" in p and not _b64(p["thoughtSignature"]):
                problems.append(f"contents[{k}]: thoughtSignature is not base64")
        if calls:
            if role != "model":
                problems.append(f"contents[{k}]: functionCall in a {role} content")
            prev = contents[k - 1] if k else None
            if prev is None or prev.get("role") != "user":
                problems.append(
                    f"contents[{k}]: function call turn does not come immediately after a user "
                    "turn or a function response turn"
                )
            if any(not fc.get("name") for fc in calls):
                problems.append(f"contents[{k}]: functionCall without a name")
        if responses:
            prev = contents[k - 1] if k else None
            asked = (
                [
                    p["functionCall"].get("name")
                    for p in _items(prev.get("parts"))
                    if "functionCall" in p
                ]
                if prev is not None and prev.get("role") == "model"
                else []
            )
            if sorted(r.get("name") or "" for r in responses) != sorted(a or "" for a in asked):
                problems.append(
                    f"contents[{k}]: the number of function response parts is not equal to the "
                    "number of function call parts of the function call turn"
                )
            by_id = {
                p["functionCall"].get("id"): p["functionCall"].get("name")
                for p in _items(prev.get("parts") if prev is not None else None)
                if "functionCall" in p and p["functionCall"].get("id")
            }
            for r in responses:
                rid = r.get("id")
                if rid and rid in by_id and by_id[rid] != r.get("name"):
                    problems.append(
                        f"contents[{k}]: functionResponse {rid!r} names {r.get('name')!r}, "
                        f"its call is {by_id[rid]!r} (responses are matched by name and id)"
                    )
        elif calls:
            nxt = contents[k + 1] if k + 1 < len(contents) else None
            if nxt is None or not any("functionResponse" in p for p in _items(nxt.get("parts"))):
                problems.append(f"contents[{k}]: function calls without function responses")
    start = 0
    for k in range(len(contents) - 1, -1, -1):
        c = contents[k]
        if c.get("role") == "user" and any(
            "functionResponse" not in p for p in _items(c.get("parts"))
        ):
            start = k
            break
    for k in range(start, len(contents)):
        c = contents[k]
        if c.get("role") != "model":
            continue
        first = next((p for p in _items(c.get("parts")) if "functionCall" in p), None)
        if first is not None and not first.get("thoughtSignature"):
            problems.append(
                f"contents[{k}]: the first functionCall of a step of the current turn has no "
                "thought_signature"
            )
    return problems


# ---------------------------------------------------------------------------------------------
# Ollama /api/chat


def ollama_problems(params: dict[str, Any]) -> list[str]:
    """Problems of an `/api/chat` request (Ollama API reference, "Generate a chat completion":
    `messages[].role` is system/user/assistant/tool, `content` a string, `images` base64 strings,
    `tool_calls[].function.arguments` an object; a `tool` message answers a call of the
    assistant message before it and, as there are no call ids, names it by `tool_name`: the
    k-th `tool` message after an assistant message answers its k-th call, so it must carry
    that call's name, else the model reads the result as another tool's)."""
    messages: list[dict[str, Any]] = list(_items(params.get("messages")))
    problems = conversation_problems([m.get("role", "") for m in messages])
    budget = 0  # tool messages still expected after the last assistant message with calls
    asked: list[Any] = []  # the names of those calls, in order
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"message {i}: invalid role {role!r}")
        if not isinstance(m.get("content"), str):
            problems.append(f"message {i}: content must be a string")
        for img in m.get("images") or ():
            if not isinstance(img, str):
                problems.append(f"message {i}: images must be base64 strings")
        if role == "tool":
            if budget <= 0:
                problems.append(f"message {i}: tool message without a preceding call")
            else:
                want = asked[len(asked) - budget]
                if m.get("tool_name") != want:
                    problems.append(
                        f"message {i}: tool message names {m.get('tool_name')!r}, "
                        f"the call it answers is {want!r}"
                    )
            budget -= 1
            continue
        budget = 0
        if role == "assistant":
            calls = _items(m.get("tool_calls"))
            for c in calls:
                if not isinstance(c.get("function", {}).get("arguments"), dict):
                    problems.append(f"message {i}: tool call arguments must be an object")
            budget = len(calls)
            asked = [c.get("function", {}).get("name") for c in calls]
    return problems
