"""Settings files on disk: where they are, loading and merging them, and saving one key.

Owns: the user config folder (`TETHER_CONFIG_DIR` or platformdirs' user config dir for
"tether"), the two settings files, turning malformed or invalid files into `ConfigError`s that
name the file and the place, and atomic, locked writes. Does not own: the schema
(`tether.settings.model`) or the merge rules (`tether.settings.merge`).

Files, lowest precedence first:
    <user config dir>/settings.json         the user's settings
    <project>/.tether/settings.json         the project's settings (wins)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import platformdirs
from filelock import FileLock
from pydantic import ValidationError

from tether.atomic import write_atomic
from tether.errors import ConfigError
from tether.settings.merge import get_dotted, merge_layers, set_dotted, split_dotted, unset_dotted
from tether.settings.model import AgentConfig

if TYPE_CHECKING:
    from tether.settings.agent_files import AgentDefinition

CONFIG_DIR_ENV = "TETHER_CONFIG_DIR"
"""Environment variable overriding the user config folder (tests, portable installs)."""

SETTINGS_FILE = "settings.json"
PROJECT_DIR = ".tether"

SettingsScope = Literal["user", "project"]


def user_config_dir() -> Path:
    """The user config folder: `$TETHER_CONFIG_DIR` when set and non-empty (`~` expanded), else
    `platformdirs.user_config_path("tether")` (e.g. `~/.config/tether` on Linux). Not created."""
    override = os.environ.get(CONFIG_DIR_ENV, "")
    if override:
        return Path(override).expanduser()
    return platformdirs.user_config_path("tether")


def settings_path(scope: SettingsScope, project_dir: Path | None = None) -> Path:
    """The settings file of a scope: the user file, or `<project_dir>/.tether/settings.json`
    (`project_dir` defaults to the current folder)."""
    if scope == "user":
        return user_config_dir() / SETTINGS_FILE
    return (project_dir or Path.cwd()) / PROJECT_DIR / SETTINGS_FILE


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedSettings:
    """The merged, validated settings and where they came from.

    Attributes:
        settings: the typed settings.
        sources: the files that existed and were read, lowest precedence first.
        layers: each source's raw JSON object, in the same order (e.g. to tell which values a
            project file set: a cloned repository's file is not necessarily trusted).
        agents: every named subagent with where it came from, agent files included, once
            `tether.settings.trust.with_agent_files` read them (they are then in
            `settings.agents.named` too); () before.
        warnings: one line per agent file that was skipped (not valid).
    """

    settings: AgentConfig
    sources: list[Path]
    layers: list[dict[str, Any]]
    agents: tuple[AgentDefinition, ...] = ()
    warnings: tuple[str, ...] = ()

    def project_layer(self, project_dir: Path) -> dict[str, Any]:
        """The raw JSON the project file contributed ({} when it was absent)."""
        target = settings_path("project", project_dir)
        for path, layer in zip(self.sources, self.layers, strict=True):
            if path == target:
                return layer
        return {}


def read_json_object(path: Path) -> dict[str, Any] | None:
    """Read one settings file as a JSON object.

    Returns:
        The object; `{}` for an empty (or whitespace-only) file; None when the file is absent.

    Raises:
        ConfigError: unreadable, not UTF-8, malformed JSON (with line and column), NaN or
            Infinity, nesting too deep to parse, or a top level other than an object.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read settings: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: settings are not UTF-8 (byte {exc.start})") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"{path}: malformed JSON: {exc}") from exc
    except RecursionError:
        raise ConfigError(f"{path}: malformed settings: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: settings must be a JSON object ({{...}}), not {type(data).__name__}"
        )
    return cast(dict[str, Any], data)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in settings")


def validate_layer(data: Mapping[str, Any], origin: str) -> AgentConfig:
    """Validate one JSON object as `AgentConfig`.

    Args:
        data: the JSON object.
        origin: what to name in errors (a file path, or "merged settings from A, B").

    Raises:
        ConfigError: `<origin>: invalid settings: <json path>: <reason>; ...`.
    """
    try:
        return AgentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{origin}: invalid settings: {describe_errors(exc, data)}") from None


def describe_errors(exc: ValidationError, data: Any) -> str:
    """Pydantic errors as `json.path: reason` items (union branch names dropped; for one
    place, only the most specific errors), joined by `; `."""
    by_path: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False):
        path = json_path(err["loc"], data)
        msg = _BRANCH_MSG.sub("", err["msg"].removeprefix("Value error, "))
        msg = msg.replace("a valid dictionary", "a JSON object")
        if msg not in by_path.setdefault(path, []):
            by_path[path].append(msg)
    keep = [
        p
        for p in by_path
        if not any(q != p and (q.startswith(p + ".") or q.startswith(p + "[")) for q in by_path)
    ]
    return "; ".join(f"{p or '(top level)'}: {' or '.join(by_path[p])}" for p in keep)


_BRANCH_MSG = re.compile(r" or instance of \w+")


def json_path(loc: Sequence[int | str], data: Any) -> str:
    """A pydantic `loc` as a JSON path (`tools.timeout`, `model[1].provider`), following the
    data so that union branch names in `loc` are left out."""
    out = ""
    node: Any = data
    for part in loc:
        if isinstance(node, list) and isinstance(part, int):
            items = cast(list[Any], node)
            node = items[part] if 0 <= part < len(items) else None
            out += f"[{part}]"
        elif isinstance(node, dict) and isinstance(part, str) and part in node:
            node = cast(dict[str, Any], node)[part]
            out += f".{part}" if out else part
        elif isinstance(node, dict | None) and isinstance(part, str) and not _is_branch(part):
            node = None  # a missing field
            out += f".{part}" if out else part
    return out


def _is_branch(part: str) -> bool:
    """Union branch names in pydantic locs: `str`, `list[...]`, `ModelEntry`, `function-after[...]`."""
    return part in {"str", "int", "float", "bool", "none"} or "[" in part or part[:1].isupper()


def load_settings(
    project_dir: Path | None = None,
    *,
    user_dir: Path | None = None,
    project_part: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> LoadedSettings:
    """Load, merge and validate the user and project settings.

    Args:
        project_dir: the project folder (its `.tether/settings.json` is read); None: no project.
        user_dir: the user config folder; None: `user_config_dir()`.
        project_part: keeps part of the project file's object (None: all of it; an unapproved
            project gives only its restrictions, `tether.settings.trust.restrictions`).

    Returns:
        `LoadedSettings`; defaults everywhere when neither file exists.

    Raises:
        ConfigError: a file is unreadable, malformed (line/column given) or invalid (the file and
            the JSON path of the bad field given).
    """
    paths = [(user_dir or user_config_dir()) / SETTINGS_FILE]
    if project_dir is not None:
        paths.append(settings_path("project", project_dir))
    sources: list[Path] = []
    layers: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    for i, path in enumerate(paths):
        data = read_json_object(path)
        if data is None:
            continue
        if i == 1 and project_part is not None:
            data = project_part(data)
        validate_layer(data, str(path))
        sources.append(path)
        layers.append(data)
        merged = merge_layers(merged, data)
    origin = "merged settings from " + ", ".join(map(str, sources))
    return LoadedSettings(settings=validate_layer(merged, origin), sources=sources, layers=layers)


def load_config(cwd: Path | str = ".") -> AgentConfig:
    """The config the settings files give for the project folder `cwd` (user file, then
    `<cwd>/.tether/settings.json`; see `tether.settings`).

    Raises:
        ConfigError: a malformed or invalid settings file (names the file and the place).
    """
    return load_settings(Path(cwd)).settings


def parse_cli_value(text: str) -> Any:
    """A `tether config set` value: JSON when it parses as JSON (`5`, `true`, `["a"]`,
    `{"k": 1}`, `null`), else the text itself as a string (`30s`, `openai/gpt-4o`)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return text


def save_setting(
    scope: SettingsScope, dotted_key: str, value: Any, *, project_dir: Path | None = None
) -> Path:
    """Set one key in the user or project settings file, keeping every other key.

    The file is read, changed and validated under a lock (`<file>.lock`, filelock), then
    replaced atomically (a temporary file in the same folder, fsync, `os.replace`); on any error
    the file is left as it was.

    Args:
        scope: `user` or `project`.
        dotted_key: e.g. `tools.timeout`, `providers.work.base_url`; `\\.` is a literal dot.
        value: a JSON value (see `parse_cli_value` for command-line text).
        project_dir: the project folder for `project` (default: the current folder).

    Returns:
        The path written.

    Raises:
        ConfigError: a bad key, a value the schema rejects (the file is named), or a malformed
            existing file (it is not overwritten).
    """
    path = settings_path(scope, project_dir)
    try:
        parts = split_dotted(dotted_key)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=10):
        current = read_json_object(path) or {}
        try:
            updated = set_dotted(current, parts, value)
        except ValueError as exc:
            raise ConfigError(f"{path}: cannot set {dotted_key}: {exc}") from None
        validate_layer(updated, f"{path} (after setting {dotted_key})")
        write_atomic(path, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode())
    return path


def read_setting(
    scope: SettingsScope, dotted_key: str, *, project_dir: Path | None = None
) -> tuple[Path, bool, Any]:
    """The value of one key in the user or project settings file: (the file, whether the key is
    set there, its value or None).

    Raises:
        ConfigError: a bad key, a malformed file.
    """
    path = settings_path(scope, project_dir)
    try:
        parts = split_dotted(dotted_key)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    found, value = get_dotted(read_json_object(path) or {}, parts)
    return path, found, value


def remove_setting(
    scope: SettingsScope, dotted_key: str, *, project_dir: Path | None = None
) -> Path:
    """Remove one key from the user or project settings file, keeping every other key (objects
    it leaves empty go too); read, changed, validated and replaced as `save_setting` does.

    Raises:
        ConfigError: a bad key, a key the file does not set, a malformed existing file.
    """
    path = settings_path(scope, project_dir)
    try:
        parts = split_dotted(dotted_key)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if not path.is_file():
        raise ConfigError(f"{dotted_key} is not set in {path}: the file does not exist")
    with FileLock(str(path) + ".lock", timeout=10):
        current = read_json_object(path) or {}
        try:
            updated = unset_dotted(current, parts)
        except ValueError:
            raise ConfigError(f"{dotted_key} is not set in {path}") from None
        validate_layer(updated, f"{path} (after removing {dotted_key})")
        write_atomic(path, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode())
    return path
