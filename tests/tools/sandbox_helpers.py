"""Helpers for running tool tests under each OS sandbox kind."""

from __future__ import annotations

import pytest

from tether.sandbox.base import Sandbox
from tether.sandbox.detect import available
from tether.sandbox.landlock_sandbox import LandlockSandbox

SANDBOX_KINDS = ("none", "bwrap", "landlock", "landlock-exec")
"""`landlock` confines the forked child (`in_child=True`: no launcher, no reaping);
`landlock-exec` runs the stdlib-only launcher (`Sandbox.wrap`, the default path of the bash tool
and of any other subprocess such as a worker)."""


def sandbox_for(kind: str) -> Sandbox | None:
    """The sandbox of `kind` (None for `none`); skips the test when it does not work here."""
    if kind == "none":
        return None
    found = available("bwrap" if kind == "bwrap" else "landlock")
    if found is None:
        pytest.skip(f"sandbox {kind} is not available on this machine")
    if isinstance(found, LandlockSandbox):
        return LandlockSandbox(found.abi, in_child=kind == "landlock")
    return found
