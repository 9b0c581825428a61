"""Task-suite benchmark for the embedded model: small, real tasks through the real `tether run` CLI.

Each task gets a fresh temporary folder (its files written first; TETHER_HOME is one temporary
folder per bench run, shared for the model cache), then
`python -m tether.cli run --no-session --max-turns N --model MODEL PROMPT` runs in that folder
with a per-task timeout. A checker looks at the folder afterwards and at the final answer (the
`done` event's text). Prints one line per task and, per model, the pass rate and the median
seconds per task (wall clock of the whole CLI process, model loading included).

    python bench/tasks.py                                   # both models, all tasks
    python bench/tasks.py --model local --tasks read_code_word,bash_echo
    python bench/tasks.py --model local/PATH.gguf --log /tmp/run.jsonl
    python bench/tasks.py --model local/qwen2.5-coder-0.5b --protocol json   # force a protocol
    PYTHONPATH=/tmp/main-src python bench/tasks.py          # the same suite on another checkout

The log (`--log`) keeps, per task, the tool calls, their results' error flags, the answer and the
stderr tail, to tell model mistakes from harness mistakes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MODELS = ("local", "local/qwen2.5-coder-0.5b")

Checker = Callable[[Path, str], bool]


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    check: Checker
    files: dict[str, str] = field(default_factory=lambda: {})


def _has(answer: str, *words: str) -> bool:
    low = answer.lower()
    return all(w.lower() in low for w in words)


def _number(answer: str, n: int, word: str) -> bool:
    return bool(re.search(rf"(?<![\d.]){n}(?![\d.])", answer)) or word in answer.lower()


def _text(folder: Path, name: str) -> str:
    path = folder / name
    return path.read_text(errors="replace") if path.is_file() else ""


def _fixed_add(folder: Path, _answer: str) -> bool:
    src = _text(folder, "add.py")
    if not src:
        return False
    scope: dict[str, Any] = {}
    try:
        exec(compile(src, "add.py", "exec"), scope)
        return scope["add"](2, 3) == 5 and scope["add"](-1, 1) == 0
    except Exception:
        return False


TASKS: tuple[Task, ...] = (
    Task(
        "read_code_word",
        "What is the code word written in secret.txt?",
        lambda f, a: _has(a, "pelican"),
        {"secret.txt": "Note to self.\nThe code word is PELICAN.\n"},
    ),
    Task(
        "read_version",
        "Which version number is set in setup.cfg?",
        lambda f, a: "3.7.2" in a,
        {"setup.cfg": "[metadata]\nname = demo\nversion = 3.7.2\nlicense = MIT\n"},
    ),
    Task(
        "read_json_port",
        "What port does config.json configure?",
        lambda f, a: "8081" in a,
        {"config.json": '{\n  "host": "0.0.0.0",\n  "port": 8081,\n  "debug": false\n}\n'},
    ),
    Task(
        "read_line_two",
        "What is written on the second line of poem.txt?",
        lambda f, a: _has(a, "violets are blue"),
        {"poem.txt": "Roses are red,\nViolets are blue,\nSugar is sweet.\n"},
    ),
    Task(
        "bash_echo",
        "Run the shell command `echo tether-ok` and tell me what it printed.",
        lambda f, a: _has(a, "tether-ok"),
    ),
    Task(
        "bash_python",
        'Run the command `python3 -c "print(6 * 7)"` and tell me its output.',
        lambda f, a: _number(a, 42, "forty-two"),
    ),
    Task(
        "write_hello",
        "Create a file named hello.txt that contains the text: Hello, world",
        lambda f, a: _text(f, "hello.txt").strip() == "Hello, world",
    ),
    Task(
        "write_todo",
        "Write a file todo.md with one line: - buy milk",
        lambda f, a: "buy milk" in _text(f, "todo.md"),
    ),
    Task(
        "mkdir_write",
        "Create the file out/done.txt containing the word yes.",
        lambda f, a: _text(f, "out/done.txt").strip().lower() == "yes",
    ),
    Task(
        "count_txt_files",
        "How many .txt files are in this folder?",
        lambda f, a: _number(a, 4, "four"),
        {"a.txt": "1", "b.txt": "2", "c.txt": "3", "d.txt": "4", "readme.md": "x"},
    ),
    Task(
        "count_py_in_src",
        "How many Python (.py) files are in the src folder?",
        lambda f, a: _number(a, 3, "three"),
        {"src/main.py": "", "src/util.py": "", "src/db.py": "", "src/notes.txt": "", "setup.py": ""},
    ),
    Task(
        "list_folder",
        "List the files in this folder.",
        lambda f, a: _has(a, "alpha.txt", "beta.txt", "gamma.csv"),
        {"alpha.txt": "a", "beta.txt": "b", "gamma.csv": "c,d"},
    ),
    Task(
        "find_file",
        "Find the file named target.cfg and tell me its path.",
        lambda f, a: "a/b/c/target.cfg" in a,
        {"a/b/c/target.cfg": "x = 1\n", "a/other.cfg": "y = 2\n", "b/readme.md": "hi\n"},
    ),
    Task(
        "grep_todo",
        "Which file contains the word TODO?",
        lambda f, a: _has(a, "auth.py") and "views.py" not in a,
        {
            "auth.py": "def login(user):\n    # TODO: check the password\n    return True\n",
            "views.py": "def index():\n    return 'home'\n",
            "models.py": "class User:\n    pass\n",
        },
    ),
    Task(
        "grep_function",
        "In which file is the function compute_total defined?",
        lambda f, a: _has(a, "math_helpers.py"),
        {
            "utils/math_helpers.py": "def compute_total(items):\n    return sum(items)\n",
            "utils/strings.py": "def shout(s):\n    return s.upper()\n",
            "app.py": "from utils.math_helpers import compute_total\n",
        },
    ),
    Task(
        "count_lines",
        "How many lines does data.csv have?",
        lambda f, a: _number(a, 6, "six"),
        {"data.csv": "id,name\n1,ann\n2,bob\n3,cy\n4,dee\n5,eve\n"},
    ),
    Task(
        "edit_config",
        "In settings.ini, change debug = true to debug = false.",
        lambda f, a: (
            "debug = false" in _text(f, "settings.ini")
            and "debug = true" not in _text(f, "settings.ini")
            and "name = shop" in _text(f, "settings.ini")
        ),
        {"settings.ini": "[app]\nname = shop\ndebug = true\nport = 80\n"},
    ),
    Task(
        "copy_value",
        "Copy the token from a.txt into a new file b.txt.",
        lambda f, a: "ZX81" in _text(f, "b.txt"),
        {"a.txt": "token: ZX81\n"},
    ),
    Task(
        "fix_bug",
        "Fix the bug in add.py: add(a, b) must return a + b.",
        _fixed_add,
        {"add.py": "def add(a, b):\n    return a - b\n"},
    ),
    Task(
        "append_line",
        "Add the name carol as a new last line of names.txt.",
        lambda f, a: _text(f, "names.txt").split() == ["alice", "bob", "carol"],
        {"names.txt": "alice\nbob\n"},
    ),
    Task(
        "delete_file",
        "Delete the file junk.tmp.",
        lambda f, a: not (f / "junk.tmp").exists() and (f / "keep.txt").is_file(),
        {"junk.tmp": "garbage\n", "keep.txt": "keep me\n"},
    ),
    Task(
        "rename_file",
        "Rename draft.txt to final.txt.",
        lambda f, a: not (f / "draft.txt").exists() and _text(f, "final.txt") == "chapter one\n",
        {"draft.txt": "chapter one\n"},
    ),
    Task(
        "search_then_write",
        "Find which .log file has an ERROR line and write that file's name into result.txt.",
        lambda f, a: "b.log" in _text(f, "result.txt") and "a.log" not in _text(f, "result.txt"),
        {
            "a.log": "INFO start\nINFO ok\n",
            "b.log": "INFO start\nERROR disk full\n",
            "c.log": "INFO idle\n",
        },
    ),
    Task(
        "sum_numbers",
        "Read numbers.txt and tell me the sum of the two numbers in it.",
        lambda f, a: _number(a, 42, "forty-two"),
        {"numbers.txt": "12\n30\n"},
    ),
)


SHIM = (
    "import sys, tether.providers.local.provider as local; local.PROTOCOL_OVERRIDE = sys.argv.pop(1); "
    "sys.argv[0] = 'tether'; from tether.cli.entry import main; main()"
)
"""Runs the CLI with `local.PROTOCOL_OVERRIDE` set (`--protocol`), everything else unchanged."""


def run_task(
    task: Task,
    model: str,
    max_turns: int,
    timeout_s: float,
    home: Path,
    protocol: str | None = None,
) -> dict[str, Any]:
    """Run one task in a fresh folder through the CLI; returns the record for the log.

    `home` (TETHER_HOME) is shared by the tasks of one bench run, so a named model is assembled
    into its cache once; runs are `--no-session`, so nothing else is kept there."""
    with tempfile.TemporaryDirectory(prefix=f"tether-task-{task.name}-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        for rel, content in task.files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(content)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["TETHER_HOME"] = str(home)
        cmd = [sys.executable, "-m", "tether.cli", "run", "--no-session"]
        if protocol:
            cmd = [sys.executable, "-c", SHIM, protocol, "run", "--no-session"]
        cmd += ["--max-turns", str(max_turns), "--model", model, task.prompt]
        started = time.monotonic()
        try:
            proc = subprocess.run(
                cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s
            )
            stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            stderr, code = "timeout", None
        seconds = time.monotonic() - started
        events: list[dict[str, Any]] = []
        for line in stdout.splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        done = next((e for e in reversed(events) if e.get("type") == "done"), None)
        answer = str(done.get("text") or "") if done else ""
        try:
            passed = task.check(work, answer)
        except Exception:
            passed = False
        return {
            "task": task.name,
            "model": model,
            "protocol": protocol or "auto",
            "passed": passed,
            "seconds": round(seconds, 2),
            "exit": code,
            "stop_reason": done.get("stop_reason") if done else None,
            "calls": [
                {"name": e["name"], "arguments": e["arguments"], "invalid": e.get("invalid")}
                for e in events
                if e.get("type") == "tool_call"
            ],
            "errors": [
                e["content"][:200] for e in events if e.get("type") == "tool_result" and e["is_error"]
            ],
            "answer": answer[:300],
            "stderr": stderr[-400:],
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", action="append", help="repeatable; default: both models")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per task")
    parser.add_argument("--log", type=Path, help="append one JSON record per task here")
    parser.add_argument(
        "--protocol",
        choices=("json", "native"),
        help="force the embedded model's reply protocol (default: chosen per model family)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="tasks run at once (default 1)")
    args = parser.parse_args(argv)
    models: list[str] = args.model or list(DEFAULT_MODELS)
    tasks = TASKS
    if args.tasks:
        wanted = set(args.tasks.split(","))
        unknown = wanted - {t.name for t in TASKS}
        if unknown:
            parser.error(f"unknown task(s): {', '.join(sorted(unknown))}")
        tasks = tuple(t for t in TASKS if t.name in wanted)
    summary: list[str] = []
    home = Path(tempfile.mkdtemp(prefix="tether-bench-home-"))
    for model in models:
        records: list[dict[str, Any]] = []
        with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
            futures = [
                pool.submit(
                    run_task, task, model, args.max_turns, args.timeout, home, args.protocol
                )
                for task in tasks
            ]
            for future in as_completed(futures):
                rec = future.result()
                records.append(rec)
                calls = " ".join(c["name"] for c in rec["calls"]) or "-"
                mark = "PASS" if rec["passed"] else "FAIL"
                print(
                    f"{model:28} {rec['task']:20} {mark} {rec['seconds']:6.1f}s  calls: {calls}",
                    flush=True,
                )
                if args.log:
                    with args.log.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
        passed = sum(r["passed"] for r in records)
        median = statistics.median(r["seconds"] for r in records)
        label = f"{model} [{args.protocol}]" if args.protocol else model
        summary.append(
            f"{label}: {passed}/{len(records)} passed ({100 * passed / len(records):.0f} %), "
            f"median {median:.1f} s per task"
        )
    shutil.rmtree(home, ignore_errors=True)
    print("\n".join(summary), flush=True)


if __name__ == "__main__":
    main()
