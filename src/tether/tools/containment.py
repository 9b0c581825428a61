"""The `tools` settings that confine tool calls, as the tools' own shapes (issue 11).

Owns: `policy_for` (the file tools' `PathPolicy`: dotenv rules, `deny_paths`, the write scope,
the protected tool folders, the opt-in) and `limits_for` (`ResourceLimits`).
Does not own: the settings schema (`tether.settings.model.ToolsSettings`), the enforcement
(`tether.tools.paths`, `tether.tools.sandbox`, `tether.tools.limits`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tether.tools.limits import ResourceLimits
from tether.tools.paths import DEFAULT_POLICY, PathPolicy

if TYPE_CHECKING:
    from tether.settings.model import ToolsSettings

PROJECT_TOOL_FOLDER = Path(".tether") / "tools"


def policy_for(tools: ToolsSettings, root: Path | None = None) -> PathPolicy:
    """The file tools' policy from the `tools` settings: the built-in dotenv rules plus
    `deny_paths` (refused to read and to write), `write_paths`, `allow_protected_writes`, and,
    with `root`, the tool folders (`root/<tools.folders>`, real paths) as protected."""
    extra = tuple(tools.deny_paths)
    protected: tuple[str, ...] = ()
    if root is not None:
        protected = tuple(os.path.realpath(root / f) for f in tools.folders)
    return PathPolicy(
        deny_read=(*DEFAULT_POLICY.deny_read, *extra),
        deny_write=(*DEFAULT_POLICY.deny_write, *extra),
        allow_read=DEFAULT_POLICY.allow_read,
        write_paths=None if tools.write_paths is None else tuple(tools.write_paths),
        protected=protected,
        allow_protected_writes=tools.allow_protected_writes,
    )


def limits_for(tools: ToolsSettings) -> ResourceLimits:
    """`tools.max_processes` and `tools.max_file_size` as `ResourceLimits`."""
    return ResourceLimits(
        max_processes=tools.max_processes, max_file_size_bytes=tools.max_file_size
    )
