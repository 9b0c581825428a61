"""Helpers for running tool tests under each OS sandbox kind."""

from __future__ import annotations

import pytest

from tether.tools.sandbox import Sandbox, available

SANDBOX_KINDS = ("none", "bwrap", "landlock")


def sandbox_for(kind: str) -> Sandbox | None:
    """The sandbox of `kind` (None for `none`); skips the test when it does not work here."""
    if kind == "none":
        return None
    found = available("bwrap" if kind == "bwrap" else "landlock")
    if found is None:
        pytest.skip(f"sandbox {kind} is not available on this machine")
    return found
