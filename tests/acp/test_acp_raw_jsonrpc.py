"""`tether acp` driven by a plain JSON-RPC client over stdio (no SDK on the client side):
initialize → session/new → a prompt with a tool call and a permission request → a prompt
cancelled while it asks → session/load. Every stdout line must be a JSON-RPC message valid
against the SDK's schema (stdout carries protocol only)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit.acp import Project, SchemaLog


class RawClient:
    """Newline-delimited JSON-RPC over a child's stdin/stdout; `on_request` answers the
    agent's requests (permission prompts)."""

    def __init__(self, proc: subprocess.Popen[str], log: SchemaLog) -> None:
        self.proc = proc
        self.log = log
        self.next_id = 0
        self.on_request: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda m: None

    def send(self, message: dict[str, Any]) -> None:
        self.log.check("out", message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "tether acp closed stdout before answering"
            message = json.loads(line)  # a line that is not JSON fails the test
            self.log.check("in", message)
            if "method" in message and "id" in message:
                answer = self.on_request(message)
                if answer is not None:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": answer})
            elif message.get("id") == rid and "method" not in message:
                return message["result"]


def _start(project: Project) -> subprocess.Popen[str]:
    return subprocess.Popen(
        project.argv(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=project.env(),
        cwd=project.work,
    )


def test_raw_jsonrpc_new_prompt_permission_cancel_load(project: Project) -> None:
    log = SchemaLog()
    with _start(project) as proc:
        client = RawClient(proc, log)
        init = client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["agentCapabilities"]["loadSession"] is True
        assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
        sid = client.request("session/new", {"cwd": str(project.work), "mcpServers": []})[
            "sessionId"
        ]

        asked: list[dict[str, Any]] = []

        def allow(message: dict[str, Any]) -> dict[str, Any]:
            asked.append(message["params"])
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        client.on_request = allow
        first = client.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "write hello.txt"}]},
        )
        assert first == {"stopReason": "end_turn"}
        assert (project.work / "hello.txt").read_text() == "hi there\n"
        assert asked[0]["toolCall"]["kind"] == "edit"
        updates = log.updates()
        call = next(u for u in updates if u["sessionUpdate"] == "tool_call")
        assert call["content"][0] == {
            "type": "diff",
            "path": str(project.work / "hello.txt"),
            "newText": "hi there\n",
        }
        assert call["status"] == "pending" and call["rawInput"]["path"] == "hello.txt"
        # the tool_call went out before the permission request about it
        order = [m.get("method") for d, m in log.messages if d == "in" and m.get("method")]
        assert order.index("session/request_permission") > next(
            i
            for i, (_, m) in enumerate(
                (d, m) for d, m in log.messages if d == "in" and m.get("method")
            )
            if m["params"].get("update", {}).get("sessionUpdate") == "tool_call"
        )

        def cancel(message: dict[str, Any]) -> dict[str, Any]:
            client.notify("session/cancel", {"sessionId": sid})
            return {"outcome": {"outcome": "cancelled"}}

        client.on_request = cancel
        second = client.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "now never.txt"}]},
        )
        assert second == {"stopReason": "cancelled"}
        assert not (project.work / "never.txt").exists()
        _finish(proc)

    with _start(project) as reload:
        client = RawClient(reload, log)
        client.request("initialize", {"protocolVersion": 1})
        before = len(log.updates())
        loaded = client.request(
            "session/load", {"sessionId": sid, "cwd": str(project.work), "mcpServers": []}
        )
        assert loaded["modes"]["currentModeId"] == "ask"
        replayed = log.updates()[before:]
        kinds = [u["sessionUpdate"] for u in replayed]
        assert kinds.count("user_message_chunk") == 2
        assert kinds.count("tool_call") == 2
        statuses = [u["status"] for u in replayed if u["sessionUpdate"] == "tool_call_update"]
        assert statuses == ["completed", "failed"]
        _finish(reload)


def _finish(proc: subprocess.Popen[str]) -> None:
    """Close the client's end: the agent exits 0 once its stdin ends."""
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def test_requests_from_a_file_and_replies_into_a_file(project: Project, tmp_path: Path) -> None:
    """`tether acp < requests.jsonl > replies.jsonl`: regular files are not pipes, which
    asyncio's pipe transports refuse (found by a new user: a traceback, exit 1)."""
    import acp

    requests = tmp_path / "requests.jsonl"
    replies = tmp_path / "replies.jsonl"
    hello: dict[str, object] = {"protocolVersion": acp.PROTOCOL_VERSION, "clientCapabilities": {}}
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n"
    )
    with requests.open("rb") as src, replies.open("wb") as dst:
        done = subprocess.run(
            project.argv(),
            stdin=src,
            stdout=dst,
            stderr=subprocess.PIPE,
            env=project.env(),
            cwd=project.work,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr.decode()
    (line,) = replies.read_text().splitlines()
    reply = json.loads(line)
    assert reply["id"] == 1 and reply["result"]["protocolVersion"] == acp.PROTOCOL_VERSION


def test_stdin_and_stdout_on_dev_null_end_at_once(project: Project) -> None:
    """`tether acp </dev/null` (a health check, systemd's `StandardInput=null`): epoll refuses
    `/dev/null`, so the reader never started: a 20-line asyncio traceback and a server that
    never exited (found by a new user). It is read through a thread like a file: end of input
    at once, exit 0, nothing on stderr; `>/dev/null` is taken the same way."""
    with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
        done = subprocess.run(
            project.argv(),
            stdin=null_in,
            stdout=null_out,
            stderr=subprocess.PIPE,
            env=project.env(),
            cwd=project.work,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr, done.stderr.decode()


def test_lines_that_are_not_messages_get_a_jsonrpc_error_and_the_session_goes_on(
    project: Project,
) -> None:
    """A line that is not JSON gets JSON-RPC's parse error (-32700) and a JSON value that is
    not an object an invalid-request error (-32600), both with `"id": null`; stderr names each
    in one line (the SDK alone logged a traceback and answered nothing); the next request is
    answered as usual."""
    import acp

    hello: dict[str, object] = {"protocolVersion": acp.PROTOCOL_VERSION, "clientCapabilities": {}}
    lines = [
        "this is not json",
        "[1, 2]",
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": hello}),
    ]
    done = subprocess.run(
        project.argv(),
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=project.env(),
        cwd=project.work,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r.get("id"), r.get("error", {}).get("code")) for r in replies] == [
        (None, -32700),
        (None, -32600),
        (7, None),
    ]
    assert replies[2]["result"]["protocolVersion"] == acp.PROTOCOL_VERSION
    assert "Traceback" not in done.stderr
    assert done.stderr.count("tether acp: Parse error") == 1
    assert done.stderr.count("tether acp: Invalid Request") == 1


def test_params_that_do_not_fit_get_a_one_line_details(project: Project) -> None:
    """`session/new` without params (or without `cwd`) is -32602 with one line naming what is
    wrong, not the SDK's list of pydantic errors and their errors.pydantic.dev URLs (trial4);
    the next request is answered as usual."""
    import acp

    hello: dict[str, object] = {"protocolVersion": acp.PROTOCOL_VERSION, "clientCapabilities": {}}
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "session/new"},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "x"}},
        {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": hello},
    ]
    done = subprocess.run(
        project.argv(),
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        env=project.env(),
        cwd=project.work,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert "pydantic" not in done.stdout
    details = {rid: replies[rid]["error"]["data"] for rid in (1, 2, 3)}
    assert details == {
        1: {"details": "session/new: params must be an object"},
        2: {"details": "session/new: cwd: field required; mcpServers: field required"},
        3: {"details": "session/prompt: prompt: field required"},
    }
    assert all(replies[rid]["error"]["code"] == -32602 for rid in (1, 2, 3))
    assert replies[4]["result"]["protocolVersion"] == acp.PROTOCOL_VERSION
