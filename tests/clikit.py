"""Running the real `tether` CLI in a subprocess, for tests: one environment for all of them.

`cli_env(home)` is the test process's environment without provider keys (`*_API_KEY`,
`*_AUTH_TOKEN`), OpenTelemetry
settings or retry overrides, plus `TETHER_HOME=home`, quick retries (10 ms base, 50 ms cap)
and a `PYTHONPATH` naming the tether under test (whatever the working folder). `tether(args,
home)` runs `python -m tether.cli ARGS` with it, stdin empty, in `home/../work` by default.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tether as tether_pkg


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess under test (see the module docstring)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_AUTH_TOKEN")) and not k.startswith(("OTEL_", "TETHER_RETRY"))
    }
    env |= {"TETHER_HOME": str(home), "TETHER_RETRY_BASE": "10ms", "TETHER_RETRY_MAX": "50ms"}
    env |= extra
    env["PYTHONPATH"] = str(Path(tether_pkg.__file__).resolve().parents[1])
    return env


def tether(
    args: list[str], home: Path, *, cwd: Path | None = None, timeout: float = 120, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`python -m tether.cli ARGS` with `cli_env(home, **extra)`; `cwd` defaults to a `work`
    folder beside `home` (created)."""
    if cwd is None:
        cwd = home.parent / "work"
        cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=cwd,
        env=cli_env(home, **extra),
        input="",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
