"""One MCP server's connection: start, list, call, restart, stop (the official `mcp` SDK's
`Client` does the protocol; this is the harness side).

Owns: `ServerConnection` — the supervisor task that holds the SDK `Client` open (anyio scopes
must be entered and left in one task), the start-up limit, the per-call limit, cancellation,
restart after a crash (bounded), the stdio server's sandboxed command line and stderr log, and
tools/list_changed (legacy `notifications/tools/list_changed` and 2026-07-28
`subscriptions/listen`). `McpServerError` is a server that is down or failed to start.
Does not own: settings (`tether.mcp.config`), offering tools (`tether.mcp.tools`), OAuth
(`tether.mcp.oauth` builds the `httpx2.Auth` passed in).

Timing: start-up (spawn/connect, handshake, first tools/list) within `spec.startup_timeout_s`
(default 10 s); one call within its limit (default 60 s). A call that runs out of time or is
cancelled is abandoned; the SDK then sends `notifications/cancelled` for it (its dispatcher's
`cancel_on_abandon`), and the server stays up. A closed connection (the process exited, the
HTTP endpoint went away) makes the call fail with `McpServerError`; the next call starts the
server again, at most `max_restarts` times per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import tempfile
import textwrap
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import httpx2
import mcp_types as mt
from mcp.client import Transport
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp import Client, StdioServerParameters
from tether.errors import McpServerError, McpStartTimeout
from tether.mcp.config import ServerSpec, server_env
from tether.mcp.runtime import server_runtime, stderr_tail
from tether.sandbox.base import Sandbox
from tether.sandbox.config import command_config
from tether.sandbox.policy import PathPolicy
from tether.tools.env import DEFAULT_REFUSED

log = logging.getLogger(__name__)

_SERVING: contextvars.ContextVar[ServerConnection | None] = contextvars.ContextVar(
    "tether_mcp_serving", default=None
)
"""The connection whose supervisor task (and the SDK's reader tasks it starts) runs here."""
_SDK_STDIO_LOG = "mcp.client.stdio"
_NOT_JSON = "Failed to parse JSONRPC message from server"


class _NoisyStdout(logging.Filter):
    """The SDK logs a stdio server's stdout line that is not JSON-RPC (a start-up banner) with
    a 12-line traceback; for a server of ours it becomes one warning naming the server and the
    line (`ServerConnection.on_warning`), once per start, and the record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        conn = _SERVING.get()
        if conn is None or record.getMessage() != _NOT_JSON:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        conn.noisy_line(_offending_line(exc))
        return False


def _offending_line(exc: BaseException | None) -> str:
    """The stdout line the SDK could not parse (pydantic's `input` of its first error)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            found = cast(list[dict[str, Any]], errors())
            if found and isinstance(found[0].get("input"), str):
                return found[0]["input"]
    return "?"


_noisy_filter = _NoisyStdout()
logging.getLogger(_SDK_STDIO_LOG).addFilter(_noisy_filter)

MAX_RESTARTS = 3
"""How many times a crashed server is started again (per connection, i.e. per run)."""
WARNINGS_DIR = "mcp-warnings"
"""The session artifact sub-folder holding each stdio server's stderr (`<server>.log`)."""
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The SDK's recommended HTTP timeouts (s): 30 for connect/write/pool, 300 for reading a
stream the server holds open."""
CLIENT_INFO = mt.Implementation(name="tether", version="0.1.0")


ToolsChanged = Callable[[Sequence[mt.Tool]], Awaitable[None] | None]


class ServerConnection:
    """A connection to one MCP server, started on demand.

    Args:
        spec: the server (expanded settings).
        root: the working folder (the sandbox's writable folder).
        sandbox: the OS sandbox stdio servers run in, or None (unconfined).
        refused_env: variable names a stdio server never sees unless its `env` names them.
        log_dir: where `<server>.log` (stderr of a stdio server) goes; None: discarded.
        auth: the HTTP auth of a remote server (OAuth), or None.
        on_tools_changed: called with the new listing after tools/list_changed.
        on_warning: told (kind, message) of a stdio server that wrote a line that is not
            JSON-RPC to stdout (`mcp_server_noisy`, once per start); None: logged at debug.
        max_restarts: restarts allowed after crashes.
        policy: the tools' policy a stdio server is confined by (`tether.sandbox.policy`:
            masked dotenv files, the unix sockets it may reach), or None.
    """

    def __init__(
        self,
        spec: ServerSpec,
        *,
        root: Path,
        sandbox: Sandbox | None = None,
        refused_env: Sequence[str] = DEFAULT_REFUSED,
        log_dir: Path | None = None,
        auth: httpx2.Auth | None = None,
        on_tools_changed: ToolsChanged | None = None,
        max_restarts: int = MAX_RESTARTS,
        policy: PathPolicy | None = None,
        on_warning: Callable[[str, str], None] | None = None,
    ) -> None:
        self.spec = spec
        self.root = root
        self.sandbox = sandbox
        self.refused_env = tuple(refused_env)
        self.log_dir = log_dir
        self.auth = auth
        self.on_tools_changed = on_tools_changed
        self.max_restarts = max_restarts
        self.starts = 0
        self.tools: tuple[mt.Tool, ...] = ()
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._errlog: TextIO | None = None
        self._log_start = 0
        self._refresh: asyncio.Task[None] | None = None
        self.policy = policy
        self.on_warning = on_warning
        self._noisy_told = False

    def noisy_line(self, line: str) -> None:
        """The server wrote `line` to stdout, which is not JSON-RPC (the SDK skips it)."""
        if self._noisy_told:
            log.debug("MCP server %s: another non-JSON stdout line: %r", self.name, line)
            return
        self._noisy_told = True
        shown = line if len(line) <= 80 else line[:79] + "…"
        message = (
            f"MCP server {self.name} wrote a non-JSON line to stdout: {shown!r} (skipped; "
            "a stdio server's stdout carries the protocol only, its logs belong on stderr)"
        )
        if self.on_warning is None:
            log.debug("%s", message)
        else:
            self.on_warning("mcp_server_noisy", message)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def running(self) -> bool:
        """Whether the server is connected (a crash is noticed at the next request)."""
        return self._client is not None and self._task is not None and not self._task.done()

    # --- start / stop -------------------------------------------------------------------

    def stdio_parameters(self) -> StdioServerParameters:
        """The SDK's launch parameters: the command inside the sandbox (writes only under the
        working folder, network per `spec.network`, the tools' policy: trust roots read-only,
        dotenv files masked, unix sockets per `tools.allow_unix_sockets`; its whole runtime
        visible read-only: `tether.mcp.runtime.server_runtime`), the scrubbed environment plus
        the server's `env`, its cwd."""
        argv = list(self.spec.command)
        cwd = self.spec.cwd or self.root
        env = server_env(self.spec, self.refused_env)
        if self.sandbox is not None:
            readable = (cwd,) if not cwd.is_relative_to(self.root) else ()
            readable += server_runtime(argv, env, cwd)
            cfg, _ = command_config(
                self.root, self.policy, network=self.spec.network, readable=readable
            )
            argv = self.sandbox.wrap(argv, cfg)
        return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)

    @property
    def log_path(self) -> Path | None:
        """Where a stdio server's stderr goes (`<log_dir>/<server>.log`), or None."""
        return None if self.log_dir is None else self.log_dir / f"{self.spec.name}.log"

    def _open_errlog(self) -> TextIO:
        if self._errlog is None:
            path = self.log_path
            if path is None:  # kept for the failure message only
                self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._errlog = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - read on failure
        return self._errlog

    def _start_failure(self, exc: BaseException) -> McpServerError:
        """Why the server did not start: the error, its stderr's last lines and its log."""
        text = f"MCP server `{self.name}` failed to start: {_describe(exc)}"
        if self._errlog is not None and self.spec.url is None:
            self._errlog.flush()
            tail = stderr_tail(self._errlog.fileno(), self._log_start)
            if tail:
                text += "; its stderr ends with:\n" + textwrap.indent(tail, "  ")
            if self.log_path is not None:
                text += f"\n(its whole stderr: {self.log_path})"
        return McpServerError(text)

    def _transport(self, stack: AsyncExitStack) -> Transport:
        if self.spec.url is None:
            # the SDK writes the server's stderr to `errlog` (a file: it needs a descriptor)
            return stdio_client(self.stdio_parameters(), errlog=self._open_errlog())
        http = httpx2.AsyncClient(
            headers=dict(self.spec.headers), auth=self.auth, timeout=HTTP_TIMEOUT
        )
        stack.push_async_callback(http.aclose)
        return streamable_http_client(self.spec.url, http_client=http)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self._schedule_refresh()

    def _schedule_refresh(self) -> None:
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._do_refresh())

    async def _do_refresh(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            tools = await self._list(client)
        except Exception as exc:  # the next call reports a broken connection
            log.debug("MCP server %s: relisting tools failed: %s", self.name, exc)
            return
        self.tools = tools
        if self.on_tools_changed is not None:
            maybe = self.on_tools_changed(tools)
            if maybe is not None:
                await maybe

    @staticmethod
    async def _list(client: Client) -> tuple[mt.Tool, ...]:
        tools: list[mt.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hang the start
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tuple(tools)

    async def _listen(self, client: Client) -> None:
        """2026-07-28 servers announce changes on a `subscriptions/listen` stream."""
        with contextlib.suppress(Exception):
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._schedule_refresh()

    async def _supervise(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        _SERVING.set(self)  # this task's context, copied into the SDK's reader tasks
        self._noisy_told = False
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    self._transport(stack),
                    message_handler=self._on_message,
                    client_info=CLIENT_INFO,
                    cache=None,  # every tools/list and resources/read reaches the server
                )
                await stack.enter_async_context(client)
                self.tools = await self._list(client)
                caps = client.server_capabilities.tools
                listen = (
                    client.protocol_version in MODERN_PROTOCOL_VERSIONS
                    and caps is not None
                    and bool(caps.list_changed)
                )
                async with anyio.create_task_group() as tg:
                    if listen:
                        tg.start_soon(self._listen, client)
                    if not ready.done():
                        ready.set_result(client)
                    await stop.wait()
                    tg.cancel_scope.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpServerError(str(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    async def start(self) -> Client:
        """Start the server (if it is not running) and list its tools.

        Raises:
            McpServerError: it did not start within `startup_timeout_s`, failed to, or crashed
                more than `max_restarts` times.
        """
        async with self._lock:
            if self.running and self._client is not None:
                return self._client
            await self._stop_task()
            if self.starts > self.max_restarts:
                raise McpServerError(
                    f"MCP server `{self.name}` stopped {self.starts} times; it is not restarted "
                    "again in this run"
                )
            self.starts += 1
            if self.spec.url is None:
                self._log_start = os.fstat(self._open_errlog().fileno()).st_size
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            self._stop = stop = asyncio.Event()
            self._task = loop.create_task(self._supervise(ready, stop), name=f"mcp:{self.name}")
            try:
                async with asyncio.timeout(self.spec.startup_timeout_s):
                    client = await asyncio.shield(ready)
            except TimeoutError:
                # still in its handshake, it would not see the stop: cancelled at once (waiting
                # out `_stop_task`'s 10 s first made a 1 s start-up timeout cost 13 s); nobody
                # awaits `ready` now ("Future exception was never retrieved" on stderr)
                ready.cancel()
                await self._stop_task(cancel=True)
                raise McpStartTimeout(
                    f"MCP server `{self.name}` did not start within "
                    f"{self.spec.startup_timeout_s:g} s"
                ) from None
            except asyncio.CancelledError:  # a start in the background, stopped by `aclose`
                ready.cancel()
                await self._stop_task(cancel=True)
                raise
            except McpServerError:
                await self._stop_task()
                raise
            except Exception as exc:
                await self._stop_task()
                raise self._start_failure(exc) from exc
            self._client = client
            return client

    async def _stop_task(self, *, cancel: bool = False) -> None:
        """End the supervising task: ask it to stop and wait up to 10 s, then cancel it
        (`cancel`: at once); either way its transport closes and the SDK ends the process."""
        task, self._task = self._task, None
        if self._stop is not None:
            self._stop.set()
        self._client = None
        if task is None:
            return
        if cancel:
            task.cancel()
            # `wait`, not `await task`: the task's own cancellation is not this caller's
            await asyncio.wait({task}, timeout=10)
            return
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        except Exception:  # its failure was reported to the start that awaited it
            pass

    async def aclose(self) -> None:
        """Stop the server (stdio: stdin closed, then the process tree killed, by the SDK)."""
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        async with self._lock:
            await self._stop_task()
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    # --- requests -----------------------------------------------------------------------

    async def _broken(self, exc: BaseException) -> McpServerError:
        """Mark the connection down (the next request restarts it) and describe `exc`."""
        async with self._lock:
            await self._stop_task()
        left = self.max_restarts - self.starts + 1
        again = (
            "it will be restarted at the next call"
            if left > 0
            else "it is not restarted again in this run"
        )
        return McpServerError(
            f"MCP server `{self.name}` disconnected or crashed ({_describe(exc)}); {again}"
        )

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], timeout_s: float | None = None
    ) -> mt.CallToolResult:
        """Call `tool` on the server, starting it first if needed.

        Raises:
            McpServerError: the server is down, failed to start, or the connection broke.
            TimeoutError: no answer within `timeout_s` (default `spec.timeout_s`); the request
                was cancelled (`notifications/cancelled` sent).
            MCPError: the server answered the request with a protocol error.
        """
        client = await self.start()
        limit = self.spec.timeout_s if timeout_s is None else timeout_s
        try:
            async with asyncio.timeout(limit):
                return await client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED:
                raise await self._broken(exc) from exc
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.TransportError) as exc:
            raise await self._broken(exc) from exc

    async def read_resource(self, uri: str, timeout_s: float | None = None) -> mt.ReadResourceResult:
        """`resources/read` of `uri` (errors as for `call_tool`)."""
        client = await self.start()
        limit = self.spec.timeout_s if timeout_s is None else timeout_s
        try:
            async with asyncio.timeout(limit):
                return await client.read_resource(uri)
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED:
                raise await self._broken(exc) from exc
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.TransportError) as exc:
            raise await self._broken(exc) from exc


def _describe(exc: BaseException) -> str:
    """`ExcType: message`; an exception group as its leaves, `; `-joined."""
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        return "; ".join(_describe(e) for e in _leaves(group)) or type(group).__name__
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        if isinstance(e, BaseExceptionGroup):
            out += _leaves(cast("BaseExceptionGroup[BaseException]", e))
        else:
            out.append(e)
    return out
