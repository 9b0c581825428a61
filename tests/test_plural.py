"""`tether.plural.counted`: "1 request", "2 requests" (the trial read "1 requests" and
"1 user turns")."""

from __future__ import annotations

from tether.plural import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "request") == "1 request"
    assert counted(0, "request") == "0 requests" and counted(2, "user turn") == "2 user turns"
    assert counted(3, "child", "children") == "3 children" and counted(1, "child", "children") == "1 child"
