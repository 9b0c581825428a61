"""The ACP tests' parts: a project whose settings point at the loopback fault server
(`acp_project`), the environment and argv of a `tether acp` process, and `SchemaLog`, the check
of every JSON-RPC message against the SDK's own pydantic models."""

from __future__ import annotations

import json
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.meta import AGENT_METHODS, CLIENT_METHODS
from pydantic import BaseModel

from acp import schema
from kit.cli import cli_env
from kit.faultserver import FaultServer, Step, text, tool
from kit.sandbox import sandbox_or_skip

SCRIPT: list[Step] = [
    # prompt 1: a write, asked and allowed, then the answer
    tool("write", path="hello.txt", content="hi there\n"),
    text("I wrote hello.txt."),
    # prompt 2: another write; the client cancels while it is asked
    tool("write", path="never.txt", content="no\n"),
]

REQUESTS: dict[str, tuple[type[BaseModel], type[BaseModel] | None]] = {
    AGENT_METHODS["initialize"]: (schema.InitializeRequest, schema.InitializeResponse),
    AGENT_METHODS["session_new"]: (schema.NewSessionRequest, schema.NewSessionResponse),
    AGENT_METHODS["session_load"]: (schema.LoadSessionRequest, schema.LoadSessionResponse),
    AGENT_METHODS["session_prompt"]: (schema.PromptRequest, schema.PromptResponse),
    AGENT_METHODS["session_set_mode"]: (
        schema.SetSessionModeRequest,
        schema.SetSessionModeResponse,
    ),
    AGENT_METHODS["session_cancel"]: (schema.CancelNotification, None),
    CLIENT_METHODS["session_update"]: (schema.SessionNotification, None),
    CLIENT_METHODS["session_request_permission"]: (
        schema.RequestPermissionRequest,
        schema.RequestPermissionResponse,
    ),
    CLIENT_METHODS["elicitation_create"]: (
        schema.CreateFormSessionElicitationRequest,
        None,  # a union of three shapes: the client under test builds it with the SDK's models
    ),
}


@dataclass
class SchemaLog:
    """Every JSON-RPC message of a connection, each validated against the SDK's models: a
    request's or notification's params by its method, a response's result by the method of the
    request it answers (`check` raises on the first that does not validate)."""

    methods: dict[tuple[str, Any], str] = field(default_factory=dict[tuple[str, Any], str])
    messages: list[tuple[str, dict[str, Any]]] = field(
        default_factory=list[tuple[str, dict[str, Any]]]
    )
    validated: list[BaseModel] = field(default_factory=list[BaseModel])

    def check(self, direction: str, message: dict[str, Any]) -> None:
        assert message.get("jsonrpc") == "2.0", message
        self.messages.append((direction, message))
        method = message.get("method")
        if method is not None:
            params_model, _ = REQUESTS[method]
            self.validated.append(params_model.model_validate(message.get("params")))
            if "id" in message:
                self.methods[(direction, message["id"])] = method
            return
        asked_by = "out" if direction == "in" else "in"
        method = self.methods[(asked_by, message["id"])]
        assert "error" not in message, message
        _, result_model = REQUESTS[method]
        if result_model is None:
            return
        result = message.get("result")
        self.validated.append(result_model.model_validate(result if result is not None else {}))

    def updates(self) -> list[dict[str, Any]]:
        """The `session/update` payloads received, in order."""
        return [
            m["params"]["update"]
            for d, m in self.messages
            if d == "in" and m.get("method") == "session/update"
        ]


@dataclass
class Project:
    home: Path
    work: Path
    config: Path
    server: FaultServer
    stderr: Path

    def env(self) -> dict[str, str]:
        return cli_env(self.home, TETHER_CONFIG_DIR=str(self.config), OPENAI_API_KEY="sk-test")

    def argv(self) -> list[str]:
        import sys

        return [sys.executable, "-m", "tether.cli", "acp"]


@contextmanager
def acp_project(tmp_path: Path, script: list[Step] | None = None) -> Generator[Project]:
    """A home, a work folder and a config folder under `tmp_path`, the fault server playing
    `script` (default `SCRIPT`), and settings choosing it (`fake/m`) with a working OS sandbox
    (else: skip)."""
    home, work, config = tmp_path / "home", tmp_path / "work", tmp_path / "config"
    for d in (home, work, config):
        d.mkdir()
    with FaultServer(SCRIPT if script is None else script) as server:
        settings = {
            "model": "fake/m",
            "providers": {"fake": {"type": "openai", "base_url": server.openai_url}},
            "tools": {"sandbox": sandbox_or_skip()},
        }
        (config / "settings.json").write_text(json.dumps(settings))
        yield Project(home, work.resolve(), config, server, tmp_path / "stderr.log")


class AcpPipe:
    """A `tether acp` process of `project` driven over its stdin/stdout by plain JSON-RPC:
    `call` sends a request and returns the whole reply (a `result` or an `error`), keeping the
    `session/update` payloads that came before it in `updates`; the agent's permission
    requests are answered by `allow` (the first option when True, else cancelled)."""

    def __init__(self, project: Project, *, cwd: Path | None = None, allow: bool = True) -> None:
        import subprocess

        self.allow = allow
        self.updates: list[dict[str, Any]] = []
        self._next = 0
        self._stderr = project.stderr.open("a")
        self.proc = subprocess.Popen(
            project.argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=project.env(),
            cwd=cwd or project.work,
        )

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self._next
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "tether acp closed stdout before answering"
            message = json.loads(line)
            if message.get("method") == "session/update":
                self.updates.append(message["params"]["update"])
            elif "method" in message and "id" in message:  # a permission request
                options: list[dict[str, Any]] = message["params"].get("options") or []
                outcome: dict[str, Any] = (
                    {"outcome": "selected", "optionId": options[0]["optionId"]}
                    if self.allow and options
                    else {"outcome": "cancelled"}
                )
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})
            elif message.get("id") == rid:
                return message

    def start(self, cwd: Path) -> str:
        """initialize, then session/new in `cwd`: the session id."""
        import acp

        hello: dict[str, Any] = {"protocolVersion": acp.PROTOCOL_VERSION, "clientCapabilities": {}}
        assert "result" in self.call("initialize", hello)
        reply = self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        return reply["result"]["sessionId"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> AcpPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()
