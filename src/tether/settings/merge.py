"""Merging settings layers (pure; inputs are never mutated).

Rules, applied key by key when a higher-precedence layer (`overlay`, e.g. the project file) is
laid over a lower one (`base`, e.g. the user file):

- object + object → deep merge (keys of both; shared keys merged by these same rules);
- array + array → concatenation, the overlay's items FIRST, then the base's (so a project's
  `model` list is tried before the user's, and lists such as `tools.deny_paths` or
  `tools.refused_env` only ever grow); duplicates are kept, not removed;
- anything else → the overlay's value replaces the base's (`null` included: a project can clear
  a user value).

`{}` is the identity on both sides. The merge is associative when the layers agree on the type
at each key (as files valid against one schema do); a scalar or `null` laid over an object and
then an object again is not (the grouping decides whether the first object survives).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast


def merge_layers(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Lay `overlay` over `base` by the module's rules.

    Args:
        base: the lower-precedence JSON object (e.g. the user settings).
        overlay: the higher-precedence JSON object (e.g. the project settings).

    Returns:
        A new dict; nested objects and arrays are fresh copies, neither input is modified.
    """
    out: dict[str, Any] = {k: _copy(v) for k, v in base.items()}
    for key, value in overlay.items():
        if key in out:
            out[key] = _merge_value(out[key], value)
        else:
            out[key] = _copy(value)
    return out


def _merge_value(base: Any, overlay: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(overlay, Mapping):
        return merge_layers(cast(Mapping[str, Any], base), cast(Mapping[str, Any], overlay))
    if isinstance(base, list) and isinstance(overlay, list):
        return [_copy(v) for v in cast(list[Any], overlay)] + cast(list[Any], base)
    return _copy(overlay)


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in cast(Mapping[str, Any], value).items()}
    if isinstance(value, list):
        return [_copy(v) for v in cast(list[Any], value)]
    return value


def set_dotted(data: Mapping[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    """A copy of `data` with `value` stored at the object path `path` (objects created as needed).

    Raises:
        ValueError: an intermediate key holds a non-object value, or `path` is empty.
    """
    if not path:
        raise ValueError("empty key")
    out: dict[str, Any] = {k: _copy(v) for k, v in data.items()}
    node = out
    for i, key in enumerate(path[:-1]):
        child = node.get(key)
        if child is None:
            child = {}
        elif not isinstance(child, dict):
            raise ValueError(f"{'.'.join(path[: i + 1])} is not an object")
        node[key] = child
        node = cast(dict[str, Any], child)
    node[path[-1]] = _copy(value)
    return out


def get_dotted(data: Mapping[str, Any], path: list[str]) -> tuple[bool, Any]:
    """(True, the value) at the object path `path` of `data`, or (False, None) when absent."""
    node: Any = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = cast(dict[str, Any], node)[key]
    return True, node


def unset_dotted(data: Mapping[str, Any], path: list[str]) -> dict[str, Any]:
    """A copy of `data` without the key at `path`; objects left empty by it are removed too.

    Raises:
        ValueError: nothing is set at `path`, or `path` is empty.
    """
    if not path:
        raise ValueError("empty key")
    found, _ = get_dotted(data, path)
    if not found:
        raise ValueError("not set")
    out: dict[str, Any] = {k: _copy(v) for k, v in data.items()}
    trail: list[dict[str, Any]] = [out]
    for key in path[:-1]:
        trail.append(cast(dict[str, Any], trail[-1][key]))
    del trail[-1][path[-1]]
    for depth in range(len(path) - 1, 0, -1):  # empty parents go with it
        if trail[depth]:
            break
        del trail[depth - 1][path[depth - 1]]
    return out


def split_dotted(key: str) -> list[str]:
    r"""Split `tools.timeout` into `["tools", "timeout"]`; `\.` keeps a literal dot
    (`context.windows.gpt-4\.1.context_window`).

    Raises:
        ValueError: an empty key or an empty part (`a..b`).
    """
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(key):
        ch = key[i]
        if ch == "\\" and i + 1 < len(key) and key[i + 1] == ".":
            current.append(".")
            i += 2
            continue
        if ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    if any(not p for p in parts):
        raise ValueError(f"bad settings key {key!r}: use dotted names like tools.timeout")
    return parts
