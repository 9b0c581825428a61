"""`tether run --token`: the run's API key from the command line, without the environment.

Owns: `give_token`. `--token KEY` is the key itself; `--token @PATH` reads it from a file's first
line, so it stays out of the process list and the shell history (`@/dev/fd/3` with `3<keyfile`,
`@/run/secrets/key`). The key goes to `tether.credentials.give_key` for the provider `--model`
names: found first, never stored, never in `os.environ` (tool, hook and MCP subprocesses cannot
see it), redacted from tool output, never printed (errors name the flag, not the value).
"""

from __future__ import annotations

from pathlib import Path

from tether.credentials import give_key
from tether.errors import ConfigError


def read_token(value: str) -> str:
    """The key `--token VALUE` gives: VALUE, or the first line of the file `@PATH` names.

    Raises:
        ConfigError: the file cannot be read, or the key is empty.
    """
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"--token @{path}: cannot read it ({exc.strerror})") from None
        value = next(iter(text.splitlines()), "")
    if not value.strip():
        raise ConfigError("--token is empty")
    return value.strip()


def give_token(token: str | None, model: str | None) -> None:
    """Hand `--token`'s key to the provider `--model PROVIDER/MODEL` names (nothing when
    `token` is None).

    Raises:
        ConfigError: no `--model`, or a model that takes no key, or a bad `@PATH`.
    """
    if token is None:
        return
    provider = (model or "").strip().partition("/")[0]
    if not provider:
        raise ConfigError("--token needs --model PROVIDER/MODEL: the key is for that provider")
    if provider == "local":
        raise ConfigError("--token: the local model takes no key")
    give_key(provider, read_token(token))
