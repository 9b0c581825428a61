"""Counted nouns in messages (pure): `counted(1, "request")` is "1 request", `counted(2,
"request")` "2 requests" — never "1 requests" or "request(s)".

Owns: `counted`.
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, in the plural (`plural`, else `noun` + "s") unless `n` is 1."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
