"""The embedded model's reply grammar: one tool call that obeys the tool's schema, or an answer.

Owns: the action schema (`{"tool": NAME, "arguments": {...}}` per offered tool, or
`{"answer": TEXT}`) and its GBNF grammar. Does not own: generation (`tether.providers.local.provider`).

The grammar is built by llama-cpp-python's own JSON-schema converter
(`llama_cpp.llama_grammar.SchemaConverter`), with three additions where that converter is
looser than the schema:
- numeric bounds (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`), which the
  converter ignores (its source: "TODO: support minimum, maximum, ..."): a bounded `integer` or
  `number` becomes a rule admitting exactly the integers inside the bounds (a bounded float is
  generated as a whole number; a subset of what the schema allows, never outside it);
- JSON string characters: the converter's `char` admits raw control characters, which make the
  reply invalid JSON; here they must be escaped (as JSON requires, RFC 8259 §7);
- no invented keys: a tool's arguments object admits only its declared properties.
Optional arguments stay optional (the model may leave them out) and `default` values are never
put into the grammar. Enums, `const`, `pattern` and `minLength`/`maxLength` go through the
converter unchanged (it supports them).
"""

from __future__ import annotations

import math
from typing import Any, cast

from tether.errors import ConfigError
from tether.providers.base import ToolSpec, inline_refs

MAX_DIGITS = 15
"""Longest integer the grammar writes for a bound left open (JSON-safe: below 2**53)."""

JSON_CHAR = (
    r'[^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" ('
    r"[0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | "
    r'[dD] [89abAB] [0-9a-fA-F]{2} "\\" "u" [dD] [c-fC-F] [0-9a-fA-F]{2}))'
)
"""A JSON string character (RFC 8259 §7): control characters only as escapes; a `\\u` escape
of a UTF-16 surrogate only as a high-low pair (§8.2: a lone surrogate is not a character, and
decoders such as pydantic's refuse the string)."""

_DROPPED_KEYS = ("title", "default", "$schema", "description", "examples")
_BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def action_schema(tools: tuple[ToolSpec, ...], *, answer: bool = True) -> dict[str, Any]:
    """The JSON schema every reply is constrained to: one tool call or (with `answer`, or when
    no tool is offered) one answer."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.name},
                "arguments": arguments_schema(t.parameters),
            },
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    if answer or not options:
        options.append(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    return {"anyOf": options}


def arguments_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema as the grammar sees it: no titles, defaults or descriptions, and
    no undeclared keys; local `$ref`s (`#/$defs/...`, `#/definitions/...`) inlined, since the
    tool's schema is nested inside the reply's schema where its root no longer resolves them."""
    out = _strip(inline_refs(schema))
    if out.get("type") == "object" or "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def _strip(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            props = cast(dict[str, Any], value)
            out[key] = {k: _strip(cast(dict[str, Any], v)) for k, v in props.items()}
        elif isinstance(value, dict):
            out[key] = _strip(cast(dict[str, Any], value))
        elif isinstance(value, list):
            items = cast(list[Any], value)
            out[key] = [_strip(cast(dict[str, Any], v)) if isinstance(v, dict) else v for v in items]
        else:
            out[key] = value
    return out


def action_grammar(tools: tuple[ToolSpec, ...], *, answer: bool = True) -> str:
    """The GBNF grammar of `action_schema(tools, answer=answer)` (see the module docstring).

    Raises:
        ConfigError: llama-cpp-python is not installed, or a tool's schema uses a construct the
            converter cannot express.
    """
    return schema_grammar(action_schema(tools, answer=answer))


def schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF for any JSON schema, with the bounds/char/keys additions of this module.

    Raises:
        ConfigError: llama-cpp-python is missing or the schema cannot be converted.
    """
    try:
        from llama_cpp import llama_grammar
    except ImportError as exc:
        raise ConfigError(
            "the embedded model needs llama-cpp-python: pip install 'tether[local]'"
        ) from exc
    base: Any = llama_grammar.SchemaConverter

    class _Converter(base):
        def visit(self, schema: dict[str, Any], name: str) -> str:
            kind = schema.get("type")
            if kind in ("integer", "number") and _BOUND_KEYS & schema.keys():
                lo, hi = integer_bounds(schema)
                rule = f"{int_range_rule(lo, hi)} space"
                return cast(str, self._add_rule(name or "root", rule))
            parent: Any = super()
            return cast(str, parent.visit(schema, name))

    converter: Any = _Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    try:
        converter.visit(schema, "")
    except (AssertionError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot build a grammar for the tool schemas: {exc}") from exc
    rules = cast(dict[str, str], converter._rules)  # pyright: ignore[reportPrivateUsage]
    if "char" in rules:
        rules["char"] = JSON_CHAR
    return cast(str, converter.format_grammar())


def integer_bounds(schema: dict[str, Any]) -> tuple[int | None, int | None]:
    """The smallest and largest integers a numeric schema's bounds admit (None: unbounded).

    Raises:
        ConfigError: the bounds admit no integer at all.
    """
    lo: int | None = None
    hi: int | None = None
    if "minimum" in schema:
        lo = math.ceil(schema["minimum"])
    if "exclusiveMinimum" in schema:
        x = schema["exclusiveMinimum"]
        v = math.floor(x) + 1
        lo = v if lo is None else max(lo, v)
    if "maximum" in schema:
        v = math.floor(schema["maximum"])
        hi = v if hi is None else min(hi, v)
    if "exclusiveMaximum" in schema:
        x = schema["exclusiveMaximum"]
        v = math.ceil(x) - 1
        hi = v if hi is None else min(hi, v)
    if lo is not None and hi is not None and lo > hi:
        raise ConfigError(f"numeric bounds admit no whole number: {schema}")
    return lo, hi


def int_range_rule(lo: int | None, hi: int | None) -> str:
    """A GBNF expression admitting exactly the decimal integers in [lo, hi] (None: open), written
    without leading zeros, at most `MAX_DIGITS` digits."""
    top = 10**MAX_DIGITS - 1
    lo = -top if lo is None else max(lo, -top)
    hi = top if hi is None else min(hi, top)
    alts: list[str] = []
    if hi >= 0:
        alts += _uint_range(max(lo, 0), hi)
    if lo < 0:
        alts += [f'"-" ({a})' for a in _uint_range(max(-hi, 1), -lo)]
    return "(" + " | ".join(alts) + ")"


def _uint_range(a: int, b: int) -> list[str]:
    """Alternatives admitting exactly the non-negative integers in [a, b]."""
    out: list[str] = []
    for length in range(len(str(a)), len(str(b)) + 1):
        lo = max(a, 10 ** (length - 1) if length > 1 else 0)
        hi = min(b, 10**length - 1)
        if lo <= hi:
            out += _same_length(str(lo), str(hi))
    return out


def _same_length(lo: str, hi: str) -> list[str]:
    """Alternatives admitting the digit strings between lo and hi (equal lengths), inclusive."""
    if lo == hi:
        return [f'"{lo}"']
    rest = len(lo) - 1
    if set(lo[1:]) <= {"0"} and set(hi[1:]) <= {"9"}:
        digits = f"[{lo[0]}-{hi[0]}]" if lo[0] != hi[0] else f'"{lo[0]}"'
        return [digits + (f" [0-9]{{{rest}}}" if rest else "")]
    if lo[0] == hi[0]:
        inner = " | ".join(_same_length(lo[1:], hi[1:]))
        return [f'"{lo[0]}" ({inner})']
    out: list[str] = []
    first, last = int(lo[0]), int(hi[0])
    if set(lo[1:]) <= {"0"}:
        first -= 1  # lo's whole first-digit block joins the middle range
    else:
        out.append(f'"{lo[0]}" ({" | ".join(_same_length(lo[1:], "9" * rest))})')
    if set(hi[1:]) <= {"9"}:
        last += 1
    if last - first > 1:
        a, b = first + 1, last - 1
        digits = f"[{a}-{b}]" if a != b else f'"{a}"'
        out.append(f"{digits} [0-9]{{{rest}}}")
    if not set(hi[1:]) <= {"9"}:
        out.append(f'"{hi[0]}" ({" | ".join(_same_length("0" * rest, hi[1:]))})')
    return out
