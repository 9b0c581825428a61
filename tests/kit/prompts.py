"""One prompt cache for the whole test session (`tether.providers.local.prompt_cache`).

The embedded model's prompt cache lives in `<cache dir>/prompts`; every test has its own cache
dir (`TETHER_HOME/cache` of a CLI run, `XDG_CACHE_HOME` in process), so each test would
evaluate the ~1,000-token system prompt again (~20 s of CPU on these machines). `share(cache)`
links `cache/prompts` to one folder per test session (`SHARED_ENV`, made by the conftest before
xdist's workers start, removed at the end), as one user's runs share theirs. The cache's own
tests use a folder of their own (no link).
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED_ENV = "TETHER_TEST_PROMPT_CACHE"
"""The environment variable naming the session's shared prompt-cache folder (tests only)."""


def share(cache_dir: Path) -> None:
    """Link `cache_dir/prompts` to the session's shared folder (no-op when there is none or
    the link exists)."""
    shared = os.environ.get(SHARED_ENV)
    link = cache_dir / "prompts"
    if not shared or link.is_symlink() or link.exists():
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    link.symlink_to(shared, target_is_directory=True)
