"""An agent's language servers: started on the first touch of a matching file, one per
project root and server, inside the OS sandbox, stopped with the agent.

Owns: `LspManager` — which server serves a file, starting it (sandboxed: the project
read-only, no network, its runtime visible; stderr to `<session>/lsp-logs/<server>.log`),
one warning line when a server cannot start or dies (the tools go on without it; the next
touch starts it again, at most `MAX_STARTS` times per root and server), the diagnostics
around a `write` / `edit` (`before_change` / `after_change`: the findings before, the
findings after, the block for the result), the servers for the `lsp` tool (`server_for`,
`sync_file`, `findings`), warming a server up when `read` reads one of its files (`touch`),
and closing (`aclose`; servers left in an event loop that has
ended are killed at once). `lsp_manager` builds one from the settings.
Does not own: the protocol (`tether.lsp.client` over pygls), the settings → specs rules
(`tether.lsp.config`), the block's text (`tether.lsp.report`), the `lsp` tool
(`tether.lsp.tool`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tether.lsp.config import ServerSpec, project_root, resolve_servers
from tether.lsp.report import Finding, render_block, severity_level
from tether.settings.lsp import LspSettings

if TYPE_CHECKING:
    from lsprotocol import types as lsp

    from tether.lsp.client import LspServer
    from tether.sandbox.base import Sandbox
    from tether.sandbox.policy import PathPolicy

log = logging.getLogger(__name__)

MAX_STARTS = 3
"""Starts of one server (per project root) in one agent's life: a server that keeps failing
or dying is left alone after that."""
LOG_DIR = "lsp-logs"
"""The session artifact sub-folder holding each server's stderr (`<server>.log`)."""
MAX_FILE_BYTES = 2_000_000
"""A larger file is not sent to a language server."""

Warn = Callable[[str, str], None]
"""`(kind, message)`: one warning line (`lsp_server_failed`, `lsp_server_exited`,
`lsp_no_sandbox`, `lsp_not_found`)."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """What a file's server said before a change: its findings (None when unknown). `server`
    None: one serves the file but could not be had (not tried again for the same change)."""

    server: LspServer | None
    findings: tuple[Finding, ...] | None


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is missing, too large or not UTF-8."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def findings_of(diags: list[lsp.Diagnostic], text: str | None) -> tuple[Finding, ...]:
    """LSP diagnostics as `Finding`s (columns in characters of `text`'s lines)."""
    from tether.lsp.client import char_column

    lines = (text or "").split("\n")
    out: list[Finding] = []
    for d in diags:
        row = d.range.start.line
        line = lines[row] if 0 <= row < len(lines) else ""
        out.append(
            Finding(
                line=row + 1,
                column=char_column(line, d.range.start.character),
                severity=int(d.severity) if d.severity is not None else 1,
                message=d.message,
                code=None if d.code is None else str(d.code),
                source=d.source,
            )
        )
    return tuple(out)


class LspManager:
    """The language servers of one agent (see the module docstring).

    Args:
        settings: the `lsp` section.
        root: the working folder (real path): the sandbox's project; files outside it are
            never sent.
        env: the tools' scrubbed environment (servers get it, plus their `env`; commands are
            looked up on its PATH).
        sandbox: the OS sandbox servers run in; None: no server starts (one warning).
        policy: the tools' path policy (masked dotenv files, protected folders).
        session_dir: the session's artifact folder (servers' stderr logs), or None.
        on_warning: told each warning line.
    """

    def __init__(
        self,
        settings: LspSettings,
        *,
        root: Path,
        env: Mapping[str, str],
        sandbox: Sandbox | None,
        policy: PathPolicy | None = None,
        session_dir: Path | None = None,
        on_warning: Warn = lambda _k, _m: None,
    ) -> None:
        self.settings = settings
        self.root = root
        self.env = dict(env)
        self.sandbox = sandbox
        self.policy = policy
        self.session_dir = session_dir
        self.on_warning = on_warning
        self.specs, self.missing = resolve_servers(settings, self.env)
        self.least = severity_level(settings.severity)
        self.servers: dict[tuple[Path, str], LspServer] = {}
        self._locks: dict[tuple[Path, str], asyncio.Lock] = {}
        self._starts: dict[tuple[Path, str], int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._logs: list[IO[Any]] = []
        self._warned: set[str] = set()
        self._warming: set[asyncio.Future[None]] = set()

    # --- which server, started ------------------------------------------------------------

    def spec_for(self, path: Path) -> ServerSpec | None:
        """The first server serving `path`'s extension, or None."""
        return next((s for s in self.specs if s.serves(path)), None)

    def _warn_once(self, kind: str, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.on_warning(kind, message)

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        for server in self.servers.values():  # started in a loop that has ended
            server.kill_now()
        self.servers.clear()
        self._locks.clear()
        self._loop = loop

    async def server_for(self, path: Path) -> LspServer | None:
        """The running server for `path` (real path inside the working folder), started now
        when it is not running; None when no server serves it or it cannot start (a warning
        line says why, once)."""
        for line in self.missing:
            self._warn_once("lsp_not_found", line)
        spec = self.spec_for(path)
        if spec is None or not path.is_relative_to(self.root):
            return None
        self._bind_loop()
        key = (project_root(path, self.root, spec.root_markers), spec.name)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            server = self.servers.get(key)
            if server is not None and server.alive:
                return server
            self.servers.pop(key, None)
            if self._starts.get(key, 0) >= MAX_STARTS:
                return None
            return await self._start(spec, key[0], key)

    async def _start(self, spec: ServerSpec, root: Path, key: tuple[Path, str]) -> LspServer | None:
        from tether.lsp.client import LspServer, ServerDown

        if self.sandbox is None:
            self._warn_once(
                "lsp_no_sandbox",
                "language servers not started: no OS sandbox to run them in",
            )
            return None
        self._starts[key] = self._starts.get(key, 0) + 1
        env = self._env(spec)
        try:
            argv = self._argv(spec, root, env)
            server = LspServer(
                spec, root, argv, env, errlog=self._errlog(spec), on_exit=self._exited
            )
            await server.start(self.settings.startup_timeout_s)
        except (OSError, TimeoutError, ServerDown, RuntimeError) as exc:
            why = "no answer in time" if isinstance(exc, TimeoutError) else str(exc) or repr(exc)
            self.on_warning(
                "lsp_server_failed",
                f"language server `{spec.name}` ({spec.program}) failed to start: "
                f"{why.splitlines()[0]}; edits go on without its diagnostics",
            )
            return None
        self.servers[key] = server
        return server

    def _exited(self, server: LspServer, code: int | None) -> None:
        for key, s in list(self.servers.items()):
            if s is server:
                del self.servers[key]
        again = (
            "it starts again at the next touch of one of its files"
            if self._starts.get((server.root, server.spec.name), 0) < MAX_STARTS
            else "it is not started again in this session"
        )
        self.on_warning(
            "lsp_server_exited",
            f"language server `{server.spec.name}` ({server.spec.program}) exited "
            f"(code {code}); {again}",
        )

    def _env(self, spec: ServerSpec) -> dict[str, str]:
        env = {**self.env, **spec.env}
        if self.sandbox is not None:  # caches in the private /tmp: the rest is read-only
            tmp = "/tmp" if self.sandbox.kind == "bwrap" else str(self.sandbox.tmp_dir)
            env.setdefault("XDG_CACHE_HOME", f"{tmp}/lsp-cache")
        return env

    def _argv(self, spec: ServerSpec, root: Path, env: Mapping[str, str]) -> list[str]:
        """The server's command line inside the sandbox: reads anywhere the sandbox shows
        (its runtime bound back when it lives under /tmp), writes only the private /tmp,
        the project read-only, no network."""
        from tether.mcp.runtime import server_runtime
        from tether.sandbox.config import command_config

        assert self.sandbox is not None
        argv = list(spec.command)
        readable = server_runtime(argv, env, root)
        cfg, _ = command_config(self.root, self.policy, network=False, readable=readable)
        return self.sandbox.wrap(argv, replace(cfg, write_paths=()))

    def _errlog(self, spec: ServerSpec) -> IO[Any]:
        if self.session_dir is not None:
            folder = self.session_dir / LOG_DIR
            with contextlib.suppress(OSError):
                folder.mkdir(parents=True, exist_ok=True)
                f = open(folder / f"{spec.name}.log", "ab")  # noqa: SIM115 - closed by aclose
                self._logs.append(f)
                return f
        f = tempfile.TemporaryFile()  # noqa: SIM115 - closed by aclose
        self._logs.append(f)
        return f

    # --- documents --------------------------------------------------------------------------

    async def sync_file(self, server: LspServer, path: Path) -> str | None:
        """Send `path`'s text on disk to `server` when it differs from what it has; the uri,
        or None when the file cannot be read as text."""
        text = read_text(path)
        if text is None:
            return None
        uri = path.as_uri()
        if server.text_of(uri) != text:
            server.sync(path, text)
        return uri

    async def findings(self, server: LspServer, path: Path) -> tuple[Finding, ...] | None:
        """`path`'s findings for its text on disk (sent first when the server has another),
        waited for within `lsp.timeout`; None when none came."""
        uri = await self.sync_file(server, path)
        if uri is None:
            return None
        diags = server.current(uri)
        if diags is None:
            diags = await server.diagnostics(uri, self.settings.timeout_s)
        return None if diags is None else findings_of(diags, server.text_of(uri))

    async def before_change(self, path: Path) -> Baseline | None:
        """Called by `write` / `edit` before they change `path`: starts its server on first
        touch and takes the file's findings as they are (none for a new file). None when no
        server serves it. Never raises for a server's fault."""
        try:
            server = await self.server_for(path)
            if server is None:
                return None if self.spec_for(path) is None else Baseline(None, None)
            if not path.exists():
                return Baseline(server, ())
            return Baseline(server, await self.findings(server, path))
        except Exception as exc:  # the edit goes on without diagnostics
            log.debug("lsp before_change %s: %s", path, exc, exc_info=True)
            return None

    async def after_change(self, path: Path, before: object) -> str | None:
        """Called by `write` / `edit` after they changed `path`: sends the new text, waits for
        its diagnostics (version-matched, within `lsp.timeout`) and returns the block for the
        result (`tether.lsp.report.render_block`), or None when there is nothing to say or no
        server. Never raises for a server's fault."""
        try:
            base = before if isinstance(before, Baseline) else None
            if base is not None and base.server is None:
                return None  # it failed a moment ago: not tried twice for one change
            server = None if base is None else base.server
            if server is None or not server.alive:
                server = await self.server_for(path)
            if server is None:
                return None
            text = read_text(path)
            if text is None:
                return None
            uri, _ = server.sync(path, text)
            diags = await server.diagnostics(uri, self.settings.timeout_s)
            name = os.path.relpath(path, self.root)
            if diags is None:
                if not server.alive:
                    return None
                return (
                    f'<diagnostics file="{name}" server="{server.spec.name}" pending>\n'
                    f"the server had not reported within {self.settings.timeout_s:g} s; "
                    "`lsp` with operation `diagnostics` asks again\n</diagnostics>"
                )
            before_found = base.findings if base is not None and base.server is server else None
            return render_block(
                name,
                server.spec.name,
                findings_of(diags, text),
                before_found,
                least=self.least,
                max_count=self.settings.max_diagnostics,
                max_bytes=self.settings.max_bytes,
            )
        except Exception as exc:
            log.debug("lsp after_change %s: %s", path, exc, exc_info=True)
            return None

    def touch(self, path: Path) -> None:
        """`read` read `path`: start its server and send it the file in the background, so
        that its first edit finds the server up and the findings before the change known.
        Returns at once (from inside the event loop); nothing when no server serves it."""
        if self.spec_for(path) is None or not path.is_relative_to(self.root):
            return
        task = asyncio.ensure_future(self._warm(path))
        self._warming.add(task)
        task.add_done_callback(self._warming.discard)

    async def _warm(self, path: Path) -> None:
        try:
            server = await self.server_for(path)
            if server is not None:
                await self.sync_file(server, path)
        except Exception as exc:
            log.debug("lsp touch %s: %s", path, exc, exc_info=True)

    # --- closing ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every server (shutdown, then the process group killed); idempotent. Servers
        started in another event loop (ended) are killed without waiting."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        warming, self._warming = list(self._warming), set()
        if running is not None and running is self._loop and warming:
            for task in warming:
                task.cancel()
            await asyncio.gather(*warming, return_exceptions=True)
        servers = list(self.servers.values())
        self.servers.clear()
        self._locks.clear()
        if running is not None and running is self._loop:
            await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)
        else:
            for s in servers:
                s.kill_now()
        self._loop = None
        for f in self._logs:
            with contextlib.suppress(OSError):
                f.close()
        self._logs.clear()


def lsp_manager(
    settings: LspSettings,
    *,
    root: Path,
    env: Mapping[str, str],
    sandbox: Sandbox | None,
    policy: PathPolicy | None = None,
    session_dir: Path | None = None,
    on_warning: Warn = lambda _k, _m: None,
) -> LspManager | None:
    """An `LspManager` for `settings`, or None when `lsp.enabled` is off or no server's
    command is found (and no entry of the user's is missing one)."""
    if not settings.enabled:
        return None
    manager = LspManager(
        settings,
        root=root,
        env=env,
        sandbox=sandbox,
        policy=policy,
        session_dir=session_dir,
        on_warning=on_warning,
    )
    if not manager.specs and not manager.missing:
        return None
    return manager
