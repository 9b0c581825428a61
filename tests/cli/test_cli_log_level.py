"""`tether run --log-level` (issue 39, audit row "terminal log sink"): levelled, timestamped
`<ISO time> <LEVEL> <message> <k=v …>` lines on stderr from the stdlib `logging` module, the
level from the flag, else `TETHER_LOG_LEVEL`, else the `log.level` setting; stdout stays the
JSON event stream."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.cli import Completed, run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, status, text, tool

LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (DEBUG|INFO|WARNING|ERROR) (.*)$")


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    logger = logging.getLogger("tether")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def _lines(stderr: str) -> list[tuple[str, str]]:
    return [(m[2], m[3]) for line in stderr.splitlines() if (m := LINE.match(line))]


def _run(server: FaultServer, home: Path, *args: str, level: str = "") -> Completed:
    argv = ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session"]
    config = home.parent / "config"  # settings.json there when a test writes one
    config.mkdir(exist_ok=True)
    return run_cli(
        [*argv, *args],
        home,
        OPENAI_API_KEY="sk-test",
        TETHER_LOG_LEVEL=level,
        TETHER_CONFIG_DIR=str(config),
    )


def test_info_logs_the_tool_start_and_result_with_fields(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([tool("read", path="none.txt"), text("done")]) as server:
        proc = _run(server, home, "--log-level", "info", "read it")
    assert proc.returncode == 0, proc.stderr
    lines = _lines(proc.stderr)
    starts = [m for lvl, m in lines if lvl == "INFO" and m.startswith("tool_start ")]
    assert len(starts) == 1 and "tool=read" in starts[0] and "tool_call_id=" in starts[0]
    assert any(lvl == "INFO" and m.startswith("tool_result ") for lvl, m in lines)
    assert not any(lvl == "DEBUG" for lvl, _ in lines)
    assert all(json.loads(line) for line in proc.stdout.splitlines())  # stdout: JSON only
    assert [e["type"] for e in jsonl(proc.stdout)][-1] == "done"


def test_none_by_default_then_the_flag_the_variable_and_the_setting(tmp_path: Path) -> None:
    """No log lines unless asked: by default the `tether: …` diagnostics alone (a warning
    was said twice, once as a log line, when the sink was on by default)."""
    home = tmp_path / "home"
    with FaultServer([status(500), text("ok")]) as server:  # a retry: a warning
        quiet = _run(server, home, "hi")
    assert quiet.returncode == 0, quiet.stderr
    assert _lines(quiet.stderr) == [], quiet.stderr
    with FaultServer([status(500), text("ok")]) as server:
        warned = _run(server, home, "hi", level="warning")
    levels = {lvl for lvl, _ in _lines(warned.stderr)}
    assert levels == {"WARNING"}, warned.stderr  # the retry; no info lines
    with FaultServer([text("ok")]) as server:
        debug = _run(server, home, "hi", level="debug")
    assert any(m.startswith("session_start") for _, m in _lines(debug.stderr)), debug.stderr
    assert logging.getLogger("tether").level == logging.DEBUG  # the run's level (in-process)
    (tmp_path / "config" / "settings.json").write_text(json.dumps({"log": {"level": "info"}}))
    with FaultServer([text("ok")]) as server:
        info = _run(server, home, "hi")
    assert any(m.startswith("session_start") for _, m in _lines(info.stderr)), info.stderr
    with FaultServer([text("never")]) as server:
        bad = _run(server, home, "--log-level", "loud", "hi")
        assert bad.returncode == 1 and "--log-level 'loud'" in bad.stderr
        assert "Traceback" not in bad.stderr and server.requests == []


def test_the_line_format_quotes_values_with_spaces() -> None:
    from tether.cli.logsink import KvFormatter

    record = logging.makeLogRecord(
        {"msg": "tool_result", "levelname": "INFO", "created": 0.5, "msecs": 500.0}
    )
    record.__dict__.update({"tool": "bash", "detail": 'said "hi" twice'})
    line = KvFormatter().format(record)
    assert line == '1970-01-01T00:00:00.500Z INFO tool_result tool=bash detail="said \\"hi\\" twice"'


def test_acp_takes_the_flag_too(tmp_path: Path) -> None:
    bad = run_cli(["acp", "--log-level", "loud"], tmp_path / "home")
    assert bad.returncode == 1 and "--log-level 'loud'" in bad.stderr
    assert "Traceback" not in bad.stderr
