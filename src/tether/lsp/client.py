"""One language server process and what tether keeps of it: pygls' `LanguageClient` speaks
the protocol (JSON-RPC framing, lsprotocol types); this module is the harness side.

Owns: `LspServer` — spawning the (already sandboxed) command line in its own process group
with stderr to a log, the `initialize` handshake within a time limit, the open documents and
their versions (whole-text sync), the diagnostics each file last had published and waiting
for the ones of a given version, requests that fail fast when the process dies
(`ServerDown`), the answers to the server's own requests (`workspace/configuration`, capability
registration, progress), `stop` (shutdown, exit, then the process group killed) and `kill_now`
(from outside the event loop). Positions: `utf16_column` / `char_column` convert between the
model's character columns and LSP's UTF-16 ones.
Does not own: which servers exist (`tether.lsp.config`), when they start or the sandbox's
command line (`tether.lsp.manager`), rendering (`tether.lsp.report`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar, Union, cast, get_args, get_origin

from lsprotocol import types as lsp
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

from tether.errors import ServerDown
from tether.lsp.config import ServerSpec, language_id

log = logging.getLogger(__name__)

T = TypeVar("T")

CLIENT_NAME = "tether"
CLIENT_VERSION = "0.1.0"
STOP_GRACE_S = 2.0
"""How long `stop` waits for `shutdown` and the process's exit before killing it (s)."""


def utf16_column(line: str, column: int) -> int:
    """The UTF-16 offset of the 1-based character `column` of `line` (clamped to the line)."""
    prefix = line[: max(column - 1, 0)]
    return len(prefix.encode("utf-16-le")) // 2


def char_column(line: str, offset: int) -> int:
    """The 1-based character column of the UTF-16 `offset` in `line`."""
    units = 0
    for i, ch in enumerate(line):
        if units >= offset:
            return i + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line) + 1


def _capabilities() -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            configuration=True,
            workspace_folders=True,
            symbol=lsp.WorkspaceSymbolClientCapabilities(),
        ),
        text_document=lsp.TextDocumentClientCapabilities(
            synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
            hover=lsp.HoverClientCapabilities(
                content_format=[lsp.MarkupKind.PlainText, lsp.MarkupKind.Markdown]
            ),
            definition=lsp.DefinitionClientCapabilities(link_support=False),
            references=lsp.ReferenceClientCapabilities(),
            document_symbol=lsp.DocumentSymbolClientCapabilities(
                hierarchical_document_symbol_support=True
            ),
        ),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
    )


def _is_notebook_filter(t: Any) -> bool:
    return get_origin(t) is Union and lsp.NotebookDocumentFilterNotebookType in get_args(t)


def _converter() -> Any:
    """pygls' converter, plus a hook lsprotocol lacks: the union of a notebook filter (a str or
    one of three shapes), which `ruff server` sends in its capabilities; without it the
    `initialize` answer cannot be read and the handshake never ends."""
    converter = default_converter()
    shapes = (
        lsp.NotebookDocumentFilterNotebookType,
        lsp.NotebookDocumentFilterScheme,
        lsp.NotebookDocumentFilterPattern,
    )

    def structure(obj: Any, _t: Any) -> Any:
        if not isinstance(obj, dict):
            return obj
        for shape in shapes:
            try:
                return converter.structure(obj, shape)
            except Exception:
                continue
        return cast(Any, obj)

    converter.register_structure_hook_func(_is_notebook_filter, structure)
    return converter


class LspServer:
    """One running language server for one project root.

    Args:
        spec: the server.
        root: its project root (`rootUri`, the one workspace folder, its cwd).
        argv: the command line to spawn (the sandbox's wrapping included).
        env: its whole environment.
        errlog: where its stderr goes (a file), or None (discarded).
        on_exit: called with the server and its exit code when the process exits after its
            handshake while not being stopped (a crash).
    """

    def __init__(
        self,
        spec: ServerSpec,
        root: Path,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        errlog: IO[Any] | None = None,
        on_exit: Callable[[LspServer, int | None], None] = lambda _s, _c: None,
    ) -> None:
        self.spec = spec
        self.root = root
        self.argv = list(argv)
        self.env = dict(env)
        self.errlog = errlog
        self.on_exit = on_exit
        self.client = LanguageClient(CLIENT_NAME, CLIENT_VERSION, converter_factory=_converter)
        self.capabilities: lsp.ServerCapabilities | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._exited = asyncio.Event()
        self._closing = False
        self._initialized = False
        self._tasks: list[asyncio.Task[Any]] = []
        self._versions: dict[str, int] = {}
        self._texts: dict[str, str] = {}
        self._diags: dict[str, tuple[int | None, list[lsp.Diagnostic]]] = {}
        self._published: dict[str, int] = {}
        self._sent_at: dict[str, int] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._register_handlers()

    # --- the server's messages to us -------------------------------------------------------

    def _register_handlers(self) -> None:
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            self._diags[params.uri] = (params.version, list(params.diagnostics))
            self._published[params.uri] = self._published.get(params.uri, 0) + 1
            self._wake()

        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [self._setting(item.section) for item in params.items]

        def folders(_params: None) -> list[lsp.WorkspaceFolder]:
            return [lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)]

        def nothing(_params: Any) -> None:
            return None

        handlers: dict[str, Callable[[Any], Any]] = {
            lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: published,
            lsp.WORKSPACE_CONFIGURATION: configuration,
            lsp.WORKSPACE_WORKSPACE_FOLDERS: folders,
        }
        for method in (
            lsp.CLIENT_REGISTER_CAPABILITY,
            lsp.CLIENT_UNREGISTER_CAPABILITY,
            lsp.WINDOW_WORK_DONE_PROGRESS_CREATE,
            lsp.WINDOW_SHOW_MESSAGE_REQUEST,
            lsp.WORKSPACE_DIAGNOSTIC_REFRESH,
            lsp.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
            lsp.WORKSPACE_INLAY_HINT_REFRESH,
            lsp.WORKSPACE_CODE_LENS_REFRESH,
            lsp.PROGRESS,
            lsp.WINDOW_LOG_MESSAGE,
            lsp.WINDOW_SHOW_MESSAGE,
            lsp.TELEMETRY_EVENT,
            lsp.LOG_TRACE,
        ):
            handlers[method] = nothing
        for method, handler in handlers.items():
            self.client.feature(method)(handler)

    def _setting(self, section: str | None) -> Any:
        """The answer to one `workspace/configuration` item: the `initialization` options
        under the dotted `section` (all of them for none), else null (its defaults)."""
        node: Any = dict(self.spec.initialization or {})
        for part in (section or "").split("."):
            if part:
                node = cast(dict[str, Any], node).get(part) if isinstance(node, dict) else None
        return node

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def _changed(self) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    # --- life ------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The spawned process's id (the sandbox's when sandboxed), or None before start."""
        return None if self.proc is None else self.proc.pid

    @property
    def alive(self) -> bool:
        """Whether the process is running and was not stopped."""
        return (
            self.proc is not None
            and self.proc.returncode is None
            and not self._exited.is_set()
            and not self._closing
        )

    async def start(self, timeout_s: float) -> None:
        """Spawn the server and complete the `initialize` handshake within `timeout_s`.

        Raises:
            ServerDown: the process exited during the handshake.
            TimeoutError: the handshake did not finish in time (the process is killed).
            OSError: the command could not be spawned.
        """
        self.loop = asyncio.get_running_loop()
        self.proc = proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.errlog if self.errlog is not None else asyncio.subprocess.DEVNULL,
            env=self.env,
            cwd=self.root,
            start_new_session=True,  # one process group: `stop` kills all of it
        )
        assert proc.stdin is not None and proc.stdout is not None
        self.client.protocol.set_writer(proc.stdin)
        self._tasks.append(asyncio.create_task(self._read(proc.stdout)))
        self._tasks.append(asyncio.create_task(self._watch(proc)))
        params = lsp.InitializeParams(
            # None: in the sandbox's PID namespace our pid names no process, and a server
            # that watches it (pyright does) would exit at once; the sandbox's
            # die-with-parent and `stop`'s kill do that watching
            process_id=None,
            root_uri=self.root.as_uri(),
            root_path=str(self.root),
            workspace_folders=[lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)],
            capabilities=_capabilities(),
            initialization_options=self.spec.initialization,
            client_info=lsp.ClientInfo(name=CLIENT_NAME, version=CLIENT_VERSION),
        )
        try:
            async with asyncio.timeout(timeout_s):
                result = await self.call(self.client.initialize_async(params))
        except BaseException:
            self._closing = True
            await self._reap()
            raise
        self.capabilities = result.capabilities
        self.client.initialized(lsp.InitializedParams())
        self._initialized = True

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await run_async(stop_event=self._stop, reader=stdout, protocol=self.client.protocol)

    async def _watch(self, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        self._stop.set()
        self._exited.set()
        self._wake()
        if not self._closing and self._initialized:  # a death during `start` is `start`'s error
            self.on_exit(self, code)

    async def call(self, request: Awaitable[T]) -> T:
        """`request`'s answer, or `ServerDown` as soon as the process exits."""
        task = asyncio.ensure_future(request)
        dead = asyncio.ensure_future(self._exited.wait())
        try:
            await asyncio.wait({task, dead}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            dead.cancel()
            if not task.done():
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        raise ServerDown(f"language server `{self.spec.name}` ({self.spec.program}) exited")

    async def stop(self) -> None:
        """`shutdown` and `exit` (within `STOP_GRACE_S`), then kill its process group and
        reap it. Idempotent; never raises for the server's faults."""
        if self._closing and (self.proc is None or self.proc.returncode is not None):
            return
        was_alive = self.alive
        self._closing = True
        if was_alive:
            with contextlib.suppress(Exception, TimeoutError):
                async with asyncio.timeout(STOP_GRACE_S):
                    await self.call(self.client.shutdown_async(None))
                    self.client.exit(None)
                    assert self.proc is not None
                    await self.proc.wait()
        await self._reap()

    async def _reap(self) -> None:
        self.kill_now()
        if self.proc is not None:
            with contextlib.suppress(Exception):
                await self.proc.wait()
        self._stop.set()
        for t in self._tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def kill_now(self) -> None:
        """Kill the process group now (from any thread or loop; nothing awaited)."""
        self._closing = True
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()

    # --- documents -------------------------------------------------------------------------

    def text_of(self, uri: str) -> str | None:
        """The text last sent for `uri`, or None when it is not open."""
        return self._texts.get(uri)

    def sync(self, path: Path, text: str) -> tuple[str, int]:
        """Send `text` as `path`'s content (`didOpen` the first time, then a whole-text
        `didChange`, and `didSave` when the server asks for it); returns the uri and the new
        version."""
        uri = path.as_uri()
        version = self._versions.get(uri)
        self._sent_at[uri] = self._published.get(uri, 0)
        if version is None:
            version = 1
            self.client.text_document_did_open(
                lsp.DidOpenTextDocumentParams(
                    text_document=lsp.TextDocumentItem(
                        uri=uri,
                        language_id=language_id(path, self.spec.name),
                        version=version,
                        text=text,
                    )
                )
            )
        else:
            version += 1
            self.client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            if self._wants_save():
                self.client.text_document_did_save(
                    lsp.DidSaveTextDocumentParams(
                        text_document=lsp.TextDocumentIdentifier(uri=uri), text=text
                    )
                )
        self._versions[uri] = version
        self._texts[uri] = text
        return uri, version

    def _wants_save(self) -> bool:
        sync = None if self.capabilities is None else self.capabilities.text_document_sync
        return isinstance(sync, lsp.TextDocumentSyncOptions) and bool(sync.save)

    def current(self, uri: str) -> list[lsp.Diagnostic] | None:
        """The diagnostics last published for the text last sent for `uri`, or None when the
        server has published none for it yet."""
        return self._diags[uri][1] if self._ready(uri) else None

    def _ready(self, uri: str) -> bool:
        got = self._diags.get(uri)
        if got is None:
            return False
        version = got[0]
        if version is not None:
            return version >= self._versions.get(uri, 0)
        return self._published.get(uri, 0) > self._sent_at.get(uri, 0)

    async def diagnostics(self, uri: str, timeout_s: float) -> list[lsp.Diagnostic] | None:
        """The diagnostics of the text last sent for `uri`: version-matched when the server
        reports versions, else the first published after it was sent; None when none came
        within `timeout_s` or the server died."""
        try:
            async with asyncio.timeout(timeout_s):
                while not self._ready(uri) and not self._exited.is_set():
                    await self._changed()
        except TimeoutError:
            return None
        return self.current(uri) if not self._exited.is_set() else None
