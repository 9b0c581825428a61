"""Choosing the OS sandbox: bubblewrap if it works here, else Landlock, else none.

Owns: `available(kind)` and `detect_sandbox()` (probe once per process, cached;
`TETHER_SANDBOX` forces a kind).
Does not own: the two kinds (`tether.sandbox.bwrap`, `tether.sandbox.landlock_sandbox`), safe
mode when there is none (`tether.sandbox.policy.NO_SANDBOX_WARNING`).
"""

from __future__ import annotations

import os

from tether.errors import ConfigError, SandboxUnavailableError
from tether.sandbox.base import SANDBOX_ENV, Sandbox, SandboxMechanism
from tether.sandbox.bwrap import bwrap_sandbox
from tether.sandbox.landlock_sandbox import landlock_sandbox


def available(kind: SandboxMechanism) -> Sandbox | None:
    """The sandbox of `kind` if it works on this machine (probed once per process), else None."""
    return bwrap_sandbox() if kind == "bwrap" else landlock_sandbox()


def detect_sandbox(kind: str | None = None) -> Sandbox | None:
    """The sandbox to use: bubblewrap if it works here, else Landlock if the kernel has it,
    else None (the caller must then run in safe mode).

    Args:
        kind: `bwrap`, `landlock`, `none` or `auto`; None reads `TETHER_SANDBOX` (default
            `auto`).

    Returns:
        A (shared, cached) `Sandbox`, or None for `none` or when nothing works in `auto`.

    Raises:
        SandboxUnavailableError: a forced kind does not work on this machine.
        ConfigError: an unknown kind.
    """
    choice = (kind if kind is not None else os.environ.get(SANDBOX_ENV, "auto")).strip().lower()
    if choice in ("", "auto"):
        return bwrap_sandbox() or landlock_sandbox()
    if choice == "none":
        return None
    if choice in ("bwrap", "landlock"):
        found = available("bwrap" if choice == "bwrap" else "landlock")
        if found is None:
            hint = (
                "install bubblewrap (e.g. `apt-get install bubblewrap`) and allow user namespaces"
                if choice == "bwrap"
                else "this kernel has no Landlock (Linux ≥ 5.13 with landlock in `lsm=`)"
            )
            raise SandboxUnavailableError(f"sandbox {choice!r} is not available here: {hint}")
        return found
    raise ConfigError(f"{SANDBOX_ENV}={choice!r}: use bwrap, landlock, none or auto")
