"""Which `LoadConfig` works for a model file on a llama.cpp build and a CPU, kept across processes.

Owns: the key (`verdict_key`: the model file's identity (resolved path, size, mtime), the
llama.cpp build's (llama-cpp-python's version, and the name, size and mtime of each shared library
it ships), the CPU's (model name and flags from /proc/cpuinfo), and `TETHER_LOCAL_FAULT` when set,
so a test's injected fault never decides a user's runs), hashed; and `Verdicts`, a small JSON file
in the user cache (`default_cache_dir()/local-model-verdicts.json`) mapping a key to the label of
the configuration that loaded and generated there, written atomically under a file lock.
Does not own: probing (`supervisor`). llama.cpp is never imported here (the parent does not load
its kernels): the build is identified from the installed package's files.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

from tether.atomic import write_atomic
from tether.providers.models import default_cache_dir

FILE_NAME = "local-model-verdicts.json"


def _cpu() -> str:
    """The CPU's model name and flags (first processor of /proc/cpuinfo)."""
    wanted: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if name in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
                wanted.setdefault(name, value.strip())
    return json.dumps(wanted, sort_keys=True)


def _build() -> str:
    """llama-cpp-python's version and its shared libraries' names, sizes and mtimes."""
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    parts = [version]
    spec = importlib.util.find_spec("llama_cpp")
    if spec is not None and spec.origin:
        lib = Path(spec.origin).parent / "lib"
        files = {so.resolve() for so in lib.glob("*.so*")} if lib.is_dir() else set[Path]()
        for so in sorted(files):
            st = so.stat()
            parts.append(f"{so.name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def verdict_key(model: Path) -> tuple[str, dict[str, str]]:
    """The key of (model file, llama.cpp build, CPU, injected fault) and its readable facts."""
    st = model.stat()
    facts = {
        "model": f"{model.resolve()} ({st.st_size} bytes, mtime {st.st_mtime_ns})",
        "build": _build(),
        "cpu": hashlib.sha256(_cpu().encode()).hexdigest()[:16],
        "fault": os.environ.get("TETHER_LOCAL_FAULT", ""),
    }
    key = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:24]
    return key, facts


class Verdicts:
    """The verdicts file (see the module's docstring)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_dir() / FILE_NAME

    def _read(self) -> dict[str, Any]:
        try:
            data: Any = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return cast(dict[str, Any], data) if isinstance(data, dict) else {}

    def get(self, key: str) -> str | None:
        """The label of the configuration that worked for `key`, or None (never probed)."""
        entry: Any = self._read().get(key)
        if isinstance(entry, dict):
            label: Any = cast(dict[str, Any], entry).get("config")
            return label if isinstance(label, str) else None
        return None

    def put(self, key: str, label: str, tried: list[str], facts: dict[str, str]) -> None:
        """Keep a verdict (never raises: without it the next process probes again)."""
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.path) + ".lock"):
                data = self._read()
                data[key] = {"config": label, "tried": tried, **facts}
                body = json.dumps(data, indent=1, sort_keys=True).encode()
                write_atomic(self.path, body, durable=False, mode=0o600)
