"""API keys: storing them (`tether login`), removing them (`tether logout`) and looking them up.

Owns: the keyring entries (service `tether`, user name = the provider name), the credential file
`<user config dir>/credentials.json` (mode 0600; used when no usable keyring backend exists or
when asked for), and the lookup order the providers use:

    explicit argument → a key given to this process (`give_key`, `tether run --token`) →
    environment variable → keyring → credential file

The environment variable is the provider's `api_key_env` when settings give one, else the
type's default (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`/`GOOGLE_API_KEY`,
`OLLAMA_API_KEY`). A key is read by tether itself and handed to the provider SDK; it is never
put into `os.environ`, and tool subprocesses never see provider key variables
(`tether.tools.env.scrubbed_env`).

Does not own: which provider needs a key (the adapters raise `AuthError`), settings files.

File format: `{"version": 1, "keys": {"<provider>": "<key>"}}`. A credential file that group or
others may read (POSIX mode bits 0o077) is refused for reading with a `ConfigError` that says how
to fix it; `login`/`logout` rewrite it with mode 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from filelock import FileLock

from tether.atomic import write_atomic
from tether.errors import ConfigError
from tether.settings.files import user_config_dir

KEYRING_SERVICE = "tether"
CREDENTIALS_FILE = "credentials.json"

Store = Literal["auto", "keyring", "file"]
Source = Literal["argument", "given", "env", "keyring", "file"]

DEFAULT_ENV: Mapping[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "ollama": ("OLLAMA_API_KEY",),
    "local": (),
}
"""The environment variables each provider type reads its key from, in order."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True, slots=True)
class FoundKey:
    """A key and where it came from (`argument`, `given`, `env`, `keyring`, `file`); `detail` names the
    variable or the file."""

    key: str
    source: Source
    detail: str = ""


_GIVEN: dict[str, str] = {}
"""Keys given to this process for one provider name each (`give_key`)."""


def give_key(provider: str, key: str) -> None:
    """Use `key` for `provider` in this process (`tether run --token`), before the environment,
    the keyring and the file: it is never stored, never put in `os.environ` (tool, hook and MCP
    subprocesses cannot see it) and, as every provider key, redacted from tool output.

    Raises:
        ConfigError: an empty key or an invalid provider name.
    """
    key = key.strip()
    if not key:
        raise ConfigError("--token is empty")
    _GIVEN[check_provider_name(provider)] = key


def credentials_path() -> Path:
    """`<user config dir>/credentials.json` (see `tether.settings.user_config_dir`)."""
    return user_config_dir() / CREDENTIALS_FILE


def check_provider_name(provider: str) -> str:
    """Return `provider` if it is a usable name (letters, digits, `_.-`), else raise ConfigError."""
    if not _NAME.match(provider):
        raise ConfigError(
            f"bad provider name {provider!r}: use letters, digits, '_', '.', '-' (e.g. anthropic)"
        )
    return provider


def env_vars_for(
    provider: str, *, type_: str | None = None, api_key_env: str | None = None
) -> tuple[str, ...]:
    """The environment variables consulted for `provider`: `api_key_env` alone when given, else
    the defaults of its type (`type_`, or the name itself when that is a type)."""
    if api_key_env:
        return (api_key_env,)
    return DEFAULT_ENV.get(type_ or provider, ())


# --- keyring -----------------------------------------------------------------------------------


def keyring_usable() -> bool:
    """Whether the active keyring backend can store secrets (not the `fail`/`null` backends,
    not an empty chainer). Importing or probing errors count as unusable."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null

        backend = keyring.get_keyring()
    except Exception:
        return False
    if isinstance(backend, fail.Keyring | null.Keyring):
        return False
    return not (isinstance(backend, chainer.ChainerBackend) and not backend.backends)


def _keyring_get(provider: str) -> str | None:
    if not keyring_usable():
        return None
    import keyring

    try:
        return keyring.get_password(KEYRING_SERVICE, provider) or None
    except Exception:  # a locked or unreachable backend: fall through to the file
        return None


# --- the credential file -----------------------------------------------------------------------


def _insecure_mode(path: Path) -> int | None:
    """The file's permission bits when group/others have any access (POSIX only), else None."""
    if os.name == "nt":
        return None
    mode = stat.S_IMODE(path.stat().st_mode)
    return mode if mode & 0o077 else None


def _read_file(path: Path, *, check_mode: bool = True) -> dict[str, str]:
    try:
        if check_mode and (mode := _insecure_mode(path)) is not None:
            raise ConfigError(
                f"{path} is readable by others (mode {mode:04o}); keys there are not used. "
                f"Fix it with: chmod 600 {path}"
            )
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read credentials: {exc.strerror or exc}") from exc
    try:
        data: Any = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    keys: Any = cast(dict[str, Any], data).get("keys", {}) if isinstance(data, dict) else None
    if not isinstance(keys, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[Any, Any], keys).items()
    ):
        raise ConfigError(f'{path}: expected {{"version": 1, "keys": {{"provider": "key"}}}}')
    return cast(dict[str, str], keys)


def _write_file(path: Path, keys: Mapping[str, str]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = json.dumps({"version": 1, "keys": dict(sorted(keys.items()))}, indent=2) + "\n"
    write_atomic(path, body.encode("utf-8"), mode=0o600)
    if (mode := _insecure_mode(path)) is not None:  # e.g. a filesystem ignoring modes
        raise ConfigError(f"{path} was written with mode {mode:04o}, not 0600; not safe for keys")


def _file_lock(path: Path) -> FileLock:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock", timeout=10)


# --- public API --------------------------------------------------------------------------------


def store_key(
    provider: str, key: str, *, store: Store = "auto"
) -> tuple[Literal["keyring", "file"], str]:
    """Store `key` for `provider` (what `tether login` does).

    Args:
        provider: the provider name (`anthropic`, or a `providers.<name>` from the settings).
        key: the secret; surrounding whitespace is stripped.
        store: `keyring`, `file`, or `auto` (the keyring when a usable backend exists and
            accepts the key, else the file).

    Returns:
        (`"keyring"` or `"file"`, a description of the place) for the user.

    Raises:
        ConfigError: a bad provider name, an empty key, `store="keyring"` with no usable backend
            or a backend that refused, or a credential file that cannot be written safely.
    """
    check_provider_name(provider)
    key = key.strip()
    if not key:
        raise ConfigError("empty key: nothing stored")
    if any(c in key for c in "\r\n\x00"):
        raise ConfigError("a key is one line without control characters")
    if store in ("auto", "keyring"):
        if keyring_usable():
            import keyring

            try:
                keyring.set_password(KEYRING_SERVICE, provider, key)
            except Exception as exc:
                if store == "keyring":
                    raise ConfigError(f"the system keyring refused the key: {exc}") from exc
            else:
                _remove_from_file(provider)  # one place per key: the stored one wins cleanly
                return "keyring", f"system keyring ({_backend_name()}), service {KEYRING_SERVICE!r}"
        elif store == "keyring":
            raise ConfigError("no usable system keyring backend; use --store file")
    path = credentials_path()
    with _file_lock(path):
        keys = _read_file(path, check_mode=False)
        keys[provider] = key
        _write_file(path, keys)
    return "file", str(path)


def _backend_name() -> str:
    import keyring

    return type(keyring.get_keyring()).__module__.rsplit(".", 1)[-1]


def _remove_from_file(provider: str) -> bool:
    path = credentials_path()
    if not path.exists():
        return False
    with _file_lock(path):
        keys = _read_file(path, check_mode=False)
        if provider not in keys:
            return False
        del keys[provider]
        _write_file(path, keys)
    return True


def remove_key(provider: str) -> list[str]:
    """Remove `provider`'s key from the keyring and the credential file (what `tether logout`
    does). Idempotent.

    Returns:
        The places a key was removed from (`"keyring"`, `"file"`); empty when there was none.
        Environment variables are not touched (the caller may mention them).

    Raises:
        ConfigError: a bad provider name or a credential file that cannot be rewritten.
    """
    check_provider_name(provider)
    removed: list[str] = []
    if keyring_usable():
        import keyring
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            if keyring.get_password(KEYRING_SERVICE, provider) is not None:
                keyring.delete_password(KEYRING_SERVICE, provider)
                removed.append("keyring")
    if _remove_from_file(provider):
        removed.append("file")
    return removed


def find_key(
    provider: str,
    *,
    explicit: str | None = None,
    type_: str | None = None,
    api_key_env: str | None = None,
    environ: Mapping[str, str] | None = None,
    stored: bool = True,
) -> FoundKey | None:
    """Look up `provider`'s key: explicit argument → environment → keyring → credential file.

    Args:
        provider: the provider name (the keyring user name and the credential-file key).
        explicit: a key given by the caller; wins when non-empty.
        type_: the provider type when the name is not one (picks the default variables).
        api_key_env: the variable to read instead of the type's defaults.
        environ: the environment (default `os.environ`).
        stored: False for a URL the user typed (`--base-url`): only the argument, `--token` and
            the environment, never the keyring or the credential file (a key `tether login`
            stored goes only to its provider's own endpoint).

    Returns:
        The key and its source, or None when no place has one.

    Raises:
        ConfigError: the credential file is readable by others, or malformed.
    """
    if explicit:
        return FoundKey(explicit, "argument")
    if given := _GIVEN.get(provider):
        return FoundKey(given, "given")
    env = os.environ if environ is None else environ
    for var in env_vars_for(provider, type_=type_, api_key_env=api_key_env):
        if value := env.get(var, "").strip():
            return FoundKey(value, "env", var)
    if not stored or not _NAME.match(provider):
        return None
    if value := _keyring_get(provider):
        return FoundKey(value, "keyring", KEYRING_SERVICE)
    path = credentials_path()
    if value := _read_file(path).get(provider, "").strip():
        return FoundKey(value, "file", str(path))
    return None


def lookup_key(
    provider: str,
    *,
    explicit: str | None = None,
    type_: str | None = None,
    api_key_env: str | None = None,
    stored: bool = True,
) -> str | None:
    """`find_key(...)`'s key alone (same arguments, `os.environ`), or None."""
    found = find_key(
        provider, explicit=explicit, type_=type_, api_key_env=api_key_env, stored=stored
    )
    return found.key if found else None
