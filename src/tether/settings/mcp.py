"""The `mcp` settings section: MCP servers by name (`tether.mcp` starts them).

Owns: `McpOAuthSettings`, `McpServerSettings`, `McpSettings`. `tether.settings.model` holds
`McpSettings` as `AgentConfig.mcp` (and re-exports the three).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from tether.settings.base import Duration
from tether.settings.base import Section as _Section

__all__ = ["McpOAuthSettings", "McpServerSettings", "McpSettings"]


class McpOAuthSettings(_Section):
    """`mcp.servers.<name>.oauth`: OAuth for a remote MCP server (the SDK's client auth).

    Attributes:
        client_id: a static client id registered with the authorization server; None: dynamic
            client registration (RFC 7591).
        client_secret: its secret, for a confidential client (`${VAR}` allowed); None: public.
        scopes: the scopes asked for; empty: what the server advertises.
    """

    client_id: str | None = None
    client_secret: str | None = None
    scopes: list[str] = Field(default_factory=list[str])


class McpServerSettings(_Section):
    """`mcp.servers.<name>`: one MCP server, started as a subprocess (`command`) or reached over
    streamable HTTP (`url`). String values may hold `${VAR}`, expanded from the environment or
    the credential store when the server starts (`tether.mcp.config`).

    Attributes:
        command: the executable of a stdio server (exclusive with `url`).
        args: its arguments.
        env: variables set for it (the only way a provider key variable reaches a server).
        cwd: its working folder, relative to the project (default: the project).
        url: the endpoint of a remote server (streamable HTTP).
        headers: HTTP headers sent to it; an `Authorization` header bypasses OAuth.
        oauth: OAuth settings for a remote server (None: OAuth only when the server asks).
        enabled: False to keep the entry but not start the server.
        timeout_s: the time limit of one tool call, seconds (JSON key `timeout`).
        startup_timeout_s: the time limit of starting and listing its tools (JSON key
            `startup_timeout`).
        network: whether a stdio server may use the network (inside the OS sandbox).
        start: `lazy` (at its first tool call, its tools offered from the last listing when one
            is cached) or `eager` (when the run starts); None: `mcp.start`.
    """

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] = Field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    oauth: McpOAuthSettings | None = None
    enabled: bool = True
    timeout_s: Duration = Field(default=60.0, alias="timeout", gt=0)
    startup_timeout_s: Duration = Field(default=10.0, alias="startup_timeout", gt=0)
    network: bool = True
    start: Literal["lazy", "eager"] | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (a stdio server) or `url` (remote)")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError("`args`, `env` and `cwd` are for stdio servers (with `command`)")
        if self.url is None and (self.headers or self.oauth):
            raise ValueError("`headers` and `oauth` are for remote servers (with `url`)")
        return self


class McpSettings(_Section):
    """`mcp`: Model Context Protocol servers whose tools the agent is offered
    (`mcp__<server>__<tool>`, see `tether.mcp`).

    Attributes:
        servers: the servers by name (letters, digits, `_`, `-`, `.`).
        start: when servers start by default: `lazy` or `eager` (see `McpServerSettings`).
    """

    servers: dict[
        Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")],
        McpServerSettings,
    ] = Field(default_factory=dict[str, McpServerSettings])
    start: Literal["lazy", "eager"] = "lazy"
