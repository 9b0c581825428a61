"""From `mcp.servers.<name>` settings to what starts a server: names, `${VAR}` expansion, env.

Owns: the tool names offered to the model (`mcp__<server>__<tool>`, `tool_names`), `${VAR}`
expansion (`expand`), the resolved launch description of a server (`ServerSpec`, built by
`resolve_server`) and the stdio server's environment (`server_env`).
Does not own: the settings schema (`tether.settings.model.McpServerSettings`), starting servers
(`tether.mcp.connection`), OAuth (`tether.mcp.oauth`).

Tool names: the model sees `mcp__<server>__<tool>`. Provider APIs accept tool names matching
`^[a-zA-Z0-9_-]{1,64}$` (Anthropic Messages `tools[].name`; OpenAI function names), so every
other character becomes `_`, and a name longer than 64 characters is cut and given an 8-hex
digest of the full name so two long names stay distinct. A name already taken (by a built-in
tool, another server's tool, or an earlier tool whose sanitized name collides) gets `_2`, `_3`, …
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tether.errors import ConfigError
from tether.settings.model import McpOAuthSettings, McpServerSettings
from tether.tools.env import DEFAULT_REFUSED, scrubbed_env

TOOL_PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

Lookup = Callable[[str], str | None]
"""Finds a variable's value (environment, then credential store), or None."""


def sanitize(part: str) -> str:
    """`part` with every character outside `[A-Za-z0-9_-]` replaced by `_` (never empty)."""
    return _BAD.sub("_", part) or "_"


def _fit(name: str, full: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def tool_names(server: str, tools: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """The model-facing name of each of `server`'s tools (module docstring).

    Args:
        server: the server name from the settings.
        tools: the server's tool names, in listing order (duplicates are dropped).
        taken: names already in use (built-in tools, other servers' tools).

    Returns:
        `{offered name: the server's tool name}`, in listing order; every offered name matches
        `^[a-zA-Z0-9_-]{1,64}$`, is unique and not in `taken`.
    """
    used = set(taken)
    out: dict[str, str] = {}
    for tool in dict.fromkeys(tools):
        full = f"{TOOL_PREFIX}{sanitize(server)}{SEPARATOR}{sanitize(tool)}"
        name = _fit(full, f"{server}\x00{tool}")
        n = 2
        while name in used:
            suffix = f"_{n}"
            name = _fit(full, f"{server}\x00{tool}")[: MAX_NAME - len(suffix)] + suffix
            n += 1
        used.add(name)
        out[name] = tool
    return out


def default_lookup(name: str) -> str | None:
    """`name` from the environment, else from the credential store (keyring, then the 0600
    credential file, as `tether login NAME` stores it)."""
    value = os.environ.get(name)
    if value is not None:
        return value
    from tether.credentials import find_key

    try:
        found = find_key(name, environ={})
    except ConfigError:
        return None
    return found.key if found else None


def expand(text: str, lookup: Lookup, where: str) -> str:
    """`text` with each `${VAR}` replaced by `lookup(VAR)`.

    Raises:
        ConfigError: a variable is found nowhere (names it and `where`).
    """

    def sub(m: re.Match[str]) -> str:
        value = lookup(m.group(1))
        if value is None:
            raise ConfigError(
                f"{where}: ${{{m.group(1)}}} is not set in the environment nor stored "
                f"(`tether login {m.group(1)}` stores it)"
            )
        return value

    return _VAR.sub(sub, text)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSpec:
    """One server as it starts: settings with `${VAR}` expanded.

    Attributes:
        name: the server name.
        command: the stdio command line (empty for a remote server).
        env: the variables the server sets (expanded `env`), before the base environment.
        cwd: its working folder (stdio).
        url: the remote endpoint, or None.
        headers: HTTP headers (expanded).
        oauth: OAuth settings, or None.
        timeout_s / startup_timeout_s: the call and start-up limits (s).
        network: whether a stdio server may use the network.
        eager: start when the run starts (else at first use).
    """

    name: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    oauth: McpOAuthSettings | None = None
    timeout_s: float = 60.0
    startup_timeout_s: float = 10.0
    network: bool = True
    eager: bool = False

    @property
    def has_authorization(self) -> bool:
        """Whether the settings give an `Authorization` header (it bypasses OAuth)."""
        return any(k.lower() == "authorization" for k in self.headers)


def resolve_server(
    name: str,
    settings: McpServerSettings,
    root: Path,
    *,
    default_start: str = "lazy",
    lookup: Lookup = default_lookup,
) -> ServerSpec:
    """`settings` for server `name` with `${VAR}` expanded in `command`, `args`, `env` values,
    `cwd`, `url`, `headers` values and the OAuth client secret.

    Raises:
        ConfigError: a variable is found nowhere.
    """
    where = f"mcp.servers.{name}"

    def x(text: str) -> str:
        return expand(text, lookup, where)

    oauth = settings.oauth
    if oauth is not None and oauth.client_secret is not None:
        oauth = oauth.model_copy(update={"client_secret": x(oauth.client_secret)})
    cwd = (root / x(settings.cwd)) if settings.cwd else root
    return ServerSpec(
        name=name,
        command=(x(settings.command), *map(x, settings.args)) if settings.command else (),
        env={k: x(v) for k, v in settings.env.items()},
        cwd=cwd if settings.command else None,
        url=x(settings.url) if settings.url else None,
        headers={k: x(v) for k, v in settings.headers.items()},
        oauth=oauth,
        timeout_s=settings.timeout_s,
        startup_timeout_s=settings.startup_timeout_s,
        network=settings.network,
        eager=(settings.start or default_start) == "eager",
    )


def server_env(
    spec: ServerSpec,
    refused: Iterable[str] = DEFAULT_REFUSED,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a stdio server: `base` (default `os.environ`) scrubbed of `refused`
    names (provider keys and secret-shaped names, as for `bash`), then the server's own `env`
    — the only way such a variable reaches a server."""
    return {**scrubbed_env(base, refused), **spec.env}
