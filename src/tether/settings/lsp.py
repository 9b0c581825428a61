"""The `lsp` settings section: language servers by name (`tether.lsp` starts them).

Owns: `LspSeverity`, `LspServerSettings`, `LspSettings`. `tether.settings.model` holds
`LspSettings` as `AgentConfig.lsp` (and re-exports the server entry).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from tether.settings.base import Duration
from tether.settings.base import Section as _Section

__all__ = ["LspServerSettings", "LspSettings", "LspSeverity"]


LspSeverity = Literal["error", "warning", "information", "hint"]
"""The least severe diagnostic a language server reports that reaches the model (`lsp.severity`)."""


class LspServerSettings(_Section):
    """`lsp.servers.<name>`: one language server (`tether.lsp`), started over stdio inside the
    OS sandbox on the first touch of a file with one of its extensions. An entry named like a
    built-in one (`python`, `typescript`, `go`, `rust`) changes only the keys it sets.

    Attributes:
        command: the server's command line (`["gopls"]`, `["pylsp"]`); None: the built-in
            entry's (an entry of a new name must set it).
        extensions: the file name endings it serves (`[".py", ".pyi"]`).
        root_markers: files or folders whose nearest folder above a file is that file's
            project root (one server per root and name); none found: the working folder.
        initialization: the LSP `initializationOptions` sent to it (also its answer to
            `workspace/configuration`).
        env: variables set for it (the tools' scrubbed environment otherwise).
        enabled: False to keep the entry (or a built-in one) but not start it.
    """

    command: list[Annotated[str, StringConstraints(min_length=1)]] | None = Field(
        default=None, min_length=1
    )
    extensions: list[Annotated[str, StringConstraints(pattern=r"^\.?[A-Za-z0-9_.+-]+$")]] | None = (
        None
    )
    root_markers: list[str] | None = None
    initialization: dict[str, Any] | None = None
    env: dict[str, str] = Field(default_factory=dict[str, str])
    enabled: bool = True


class LspSettings(_Section):
    """`lsp`: language servers as the agent's eyes (`tether.lsp`): after `write` / `edit` the
    diagnostics a server publishes for the file join the result, and the `lsp` tool asks
    servers for definitions, references, hovers and symbols.

    Attributes:
        enabled: False: no language server starts and no `lsp` tool is offered.
        severity: the least severe diagnostic shown (`error`, `warning`, `information`,
            `hint`).
        servers: language servers by name, over the built-in ones (Python: basedpyright,
            else pylsp, else `ruff server`; TypeScript/JavaScript: typescript-language-server;
            Go: gopls; Rust: rust-analyzer; each used only when its command is found).
        timeout_s: how long `write` / `edit` wait for a server's diagnostics (JSON key
            `timeout`).
        startup_timeout_s: the time limit of starting a server and its handshake (JSON key
            `startup_timeout`).
        max_diagnostics: the most diagnostics put in one result.
        max_bytes: the most bytes of diagnostics text in one result.
    """

    enabled: bool = True
    severity: LspSeverity = "error"
    servers: dict[
        Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")],
        LspServerSettings,
    ] = Field(default_factory=dict[str, LspServerSettings])
    timeout_s: Duration = Field(default=5.0, alias="timeout", gt=0)
    startup_timeout_s: Duration = Field(default=15.0, alias="startup_timeout", gt=0)
    max_diagnostics: int = Field(default=20, ge=1)
    max_bytes: int = Field(default=4000, ge=200)
