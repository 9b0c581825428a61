"""`tether acp`'s transport: the ACP agent (`tether.acp.server.TetherAcp`) on this process's
stdin and stdout, with stdout kept for protocol messages only.

Owns: `serve`, the pipes for regular files (`tether acp < requests.jsonl > replies.jsonl`), and
the line check in front of the SDK: a line that is not a JSON object is answered with a JSON-RPC
error (`bad_line_reply`) and one stderr line, never a traceback.
Does not own: the protocol methods (`tether.acp.server`), the translations (`tether.acp.convert`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
import threading
from collections.abc import Mapping
from typing import Any, cast

import acp
from tether.acp.params import invalid_params_reply
from tether.acp.server import STDIO_LIMIT_BYTES, TetherAcp

__all__ = ["bad_line_reply", "serve"]


def serve(*, model: str | None = None, overrides: Mapping[str, Any] | None = None) -> int:
    """Run `tether acp` on this process's stdin and stdout until the client closes stdin.

    Stdout carries protocol messages only: the protocol writes to a duplicate of it, and file
    descriptor 1 is pointed at stderr, so a stray write (a library's print, a child process
    that inherits it) lands in the diagnostics. Returns the exit code (0).
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    server = TetherAcp(model=model, overrides=overrides)
    copiers: list[tuple[threading.Thread, Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STDIO_LIMIT_BYTES)
        stdin, _ = _as_pipe(sys.stdin.buffer, reading=True)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        out, copier = _as_pipe(protocol_out, reading=False)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), out
        )
        copiers.extend([copier] if copier else [])
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        checked = asyncio.StreamReader(limit=STDIO_LIMIT_BYTES)
        gate = asyncio.create_task(_check_lines(reader, checked, writer))
        try:
            await acp.run_agent(cast(acp.Agent, server), writer, checked)
        finally:
            gate.cancel()
            await server.close()
            transport.close()

    asyncio.run(main())
    for thread, out in copiers:  # every reply written to the file before the process ends
        with contextlib.suppress(OSError):
            out.close()
        thread.join(timeout=10)
    return 0


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    """One line of `reader` (with its newline; without at the end of input; b"" at the end),
    however long: past the reader's limit the line is read in pieces."""
    chunks: list[bytes] = []
    while True:
        try:
            chunks.append(await reader.readuntil(b"\n"))
            return b"".join(chunks)
        except asyncio.LimitOverrunError as exc:
            chunks.append(await reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)


def bad_line_reply(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC 2.0 error reply to one input line that is not a message, or None for a
    line the protocol can take (a JSON object) or a blank one.

    JSON-RPC 2.0 §5.1: text that is not JSON is a parse error (-32700); JSON that is not a
    request object is an invalid request (-32600); both answered with `"id": null` since no id
    can be read. (The SDK logs a traceback for the first and skips it, leaving the client no
    answer.) A request whose params do not fit its method is answered with -32602 and a
    one-line `details` (`tether.acp.params`; the SDK's own answer lists pydantic's errors).
    """
    text = line.strip()
    if not text:
        return None
    try:
        message = json.loads(text)
    except ValueError:
        return _rpc_error(-32700, "Parse error: the line is not JSON")
    if not isinstance(message, dict):
        return _rpc_error(-32600, "Invalid Request: a message is one JSON object per line")
    return invalid_params_reply(cast(dict[str, Any], message))  # -32602, one line


def _rpc_error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


async def _check_lines(
    source: asyncio.StreamReader, checked: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Copy `source` into `checked` a line at a time; a line that is not a JSON object is
    answered on `writer` with a JSON-RPC error and named in one stderr line, not passed on."""
    try:
        while line := await _read_line(source):
            reply = bad_line_reply(line)
            if reply is None:
                checked.feed_data(line if line.endswith(b"\n") else line + b"\n")
                continue
            print(
                f"tether acp: {reply['error']['message']} (ignored, {len(line)} bytes)",
                file=sys.stderr,
                flush=True,
            )
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
    finally:
        checked.feed_eof()


def _as_pipe(stream: Any, *, reading: bool) -> tuple[Any, tuple[threading.Thread, Any] | None]:
    """`stream` itself when asyncio's pipe transports take it (a pipe, socket or terminal);
    for anything else — a regular file (`tether acp < requests.jsonl > replies.jsonl`), a
    device such as `/dev/null` (a health check, systemd's `StandardInput=null`), which epoll
    refuses — a pipe a daemon thread copies the stream into (`reading`) or out to it; for
    writing, also (the thread, the pipe's end) to close and join at the end."""
    fd = stream.fileno()
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd):
        return stream, None
    read_end, write_end = os.pipe()

    def copy(src: int, dst: int) -> None:
        try:
            while chunk := os.read(src, 65536):
                os.write(dst, chunk)
        except OSError:
            pass
        finally:
            os.close(write_end if reading else read_end)

    if reading:
        threading.Thread(
            target=copy, args=(stream.fileno(), write_end), daemon=True, name="acp-stdin"
        ).start()
        return os.fdopen(read_end, "rb", buffering=0), None
    thread = threading.Thread(
        target=copy, args=(read_end, stream.fileno()), daemon=True, name="acp-stdout"
    )
    thread.start()
    out = os.fdopen(write_end, "wb", buffering=0)
    return out, (thread, out)
