"""Adding "always allow" rules to the user settings file (`permissions.allow`).

Owns: `add_allow_rules` — read, append (without duplicates), validate and write the user file
under its lock, atomically, as `tether.settings.files.save_setting` does for one key; on any
error the file is left as it was.
Does not own: the rules' meaning (`tether.permissions.rules`), the settings schema.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

from tether.atomic import write_atomic
from tether.errors import ConfigError, RuleError
from tether.permissions.rules import parse_rule
from tether.settings.files import read_json_object, settings_path, validate_layer
from tether.settings.merge import set_dotted


def add_allow_rules(rules: Sequence[str]) -> Path:
    """Append `rules` to `permissions.allow` of the user settings file (kept in order, no
    duplicates). Returns the file's path.

    Raises:
        ConfigError: a rule that does not parse, a malformed settings file (not overwritten),
            a file that cannot be written.
    """
    try:
        for rule in rules:
            parse_rule(rule)
    except RuleError as exc:
        raise ConfigError(str(exc)) from None
    path = settings_path("user")
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=10):
        current = read_json_object(path) or {}
        section: Any = current.get("permissions")
        allow: Any = cast(dict[str, Any], section).get("allow", []) if isinstance(section, dict) else []
        listed = [str(r) for r in cast(list[Any], allow)] if isinstance(allow, list) else []
        new = [*listed, *(r for r in rules if r not in listed)]
        try:
            updated = set_dotted(current, ["permissions", "allow"], new)
        except ValueError as exc:
            raise ConfigError(f"{path}: cannot add permission rules: {exc}") from None
        validate_layer(updated, f"{path} (after adding permission rules)")
        try:
            write_atomic(path, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode())
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
