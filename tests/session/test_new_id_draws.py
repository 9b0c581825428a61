"""`tether.session.layout.new_id` (event and session ids: one event a tool call) draws its
random suffixes from one `os.urandom` call per `SUFFIXES_PER_DRAW` ids, not one a call (issue
38: a `getrandom` syscall per tool call; counted); the ids stay distinct and valid, and a
forked child never repeats its parent's."""

from __future__ import annotations

import os
import random
import re
from typing import Any

import pytest

from tether.session.layout import new_id, validate_session_id

ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}")


def test_a_thousand_ids_take_a_few_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = [0]
    real = os.urandom

    def counted(n: int) -> Any:
        draws[0] += 1
        return real(n)

    monkeypatch.setattr(os, "urandom", counted)
    monkeypatch.setattr(random, "_urandom", counted)  # `secrets`' way to os.urandom
    ids = [new_id() for _ in range(1000)]
    assert draws[0] <= 5  # 1,000 before (one a call)
    assert len(set(ids)) == 1000
    for i in ids:
        assert ID.fullmatch(i) and validate_session_id(i) == i


def test_a_forked_child_draws_its_own() -> None:
    new_id()  # the pool holds suffixes now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, " ".join(new_id()[-8:] for _ in range(5)).encode())
        os._exit(0)
    os.close(w)
    child = set(os.read(r, 4096).decode().split())
    os.close(r)
    os.waitpid(pid, 0)
    mine = {new_id()[-8:] for _ in range(5)}
    assert len(child) == 5 and not child & mine
