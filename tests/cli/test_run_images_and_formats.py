"""`tether run --image FILE`, `@shot.png` in the prompt, and `--output-format`, in process
against the loopback fault server: what reaches the provider, what the session file holds, and
what a script reads on stdout."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any, cast

from PIL import Image

from kit.cli import Completed, run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, status, text
from tether.session import SessionStore

JSON = ("--output-format", "json")


def png(path: Path, size: tuple[int, int] = (40, 30), color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


def run(server: FaultServer, home: Path, work: Path, *args: str, model: str = "openai/m") -> Completed:
    return run_cli(
        ["run", "--model", model, "--base-url", server.openai_url, "--session", "s1", *args],
        home,
        cwd=work,
    )


def image_urls(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for msg in body["messages"]:
        content = msg.get("content")
        if isinstance(content, list):
            parts = cast("list[dict[str, Any]]", content)
            out += [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    return out


def test_image_flag_reaches_the_provider_as_png_and_the_session_keeps_a_file(
    tmp_path: Path,
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    raw = png(work / "shot.png")
    with FaultServer([text("a red square")]) as server:
        proc = run(server, home, work, "--image", "shot.png", "what is this?")
        (req,) = server.requests
    assert proc.returncode == 0, proc.stderr
    (url,) = image_urls(req["body"])
    assert url == "data:image/png;base64," + base64.b64encode(raw).decode()  # as it was
    line = next(
        json.loads(x)
        for x in (home / "sessions" / "s1.jsonl").read_text().splitlines()
        if '"role":"user"' in x
    )
    image = line["turn"]["content"][1]
    assert image["data"] == "" and image["file"].startswith("s1/images/")
    assert (home / "sessions" / image["file"]).read_bytes() == raw
    loaded = SessionStore(home / "sessions").load("s1")
    assert loaded.turns[0].content[1].data == base64.b64encode(raw).decode()  # type: ignore[union-attr]


def test_a_mentioned_image_is_attached_and_other_at_words_are_not(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / "ui").mkdir(parents=True)
    png(work / "ui" / "login.png")
    with FaultServer([text("ok")]) as server:
        proc = run(server, home, work, "mail @alice: see @ui/login.png, and @setup.py")
        (req,) = server.requests
    assert proc.returncode == 0, proc.stderr
    assert len(image_urls(req["body"])) == 1
    user = next(m for m in req["body"]["messages"] if m["role"] == "user")
    assert "@ui/login.png" in user["content"][0]["text"]  # the mention stays in the text


def test_a_missing_or_non_image_file_is_one_line_exit_1_and_nothing_is_sent(
    tmp_path: Path,
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (work / "notes.png").write_text("not an image")
    with FaultServer([]) as server:
        missing = run(server, home, work, "--image", "gone.png", "hi")
        bad = run(server, home, work, "look at @notes.png")
        assert server.requests == []
    assert missing.returncode == 1 and bad.returncode == 1
    assert missing.stderr.strip() == "tether: gone.png: no such file"
    assert bad.stderr.strip() == (
        "tether: notes.png: not a readable image (not a format Pillow reads)"
    )  # Pillow's own message named a BytesIO object
    assert not (home / "sessions" / "s1.jsonl").exists()


def test_a_model_known_to_read_text_only_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    png(work / "shot.png")
    with FaultServer([]) as server:
        proc = run(server, home, work, "--image", "shot.png", "hi", model="openai/gpt-3.5-turbo")
        assert server.requests == []
    assert proc.returncode == 1
    assert "does not take images" in proc.stderr
    assert not (home / "sessions" / "s1.jsonl").exists()


def test_an_unknown_model_is_assumed_to_take_images(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    png(work / "shot.png")
    with FaultServer([text("ok")]) as server:
        proc = run(server, home, work, "-i", "shot.png", "hi", model="openai/some-new-model")
        assert len(server.requests) == 1
    assert proc.returncode == 0, proc.stderr


def test_output_format_json_is_one_object_with_the_result(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("forty-two")]) as server:
        proc = run(server, home, work, "--output-format", "json", "the answer?")
    assert proc.returncode == 0, proc.stderr
    (out,) = jsonl(proc.stdout)
    assert out["type"] == "result"
    assert out["answer"] == "forty-two"
    assert out["session_id"] == "s1"
    assert out["stop_reason"] == "end_turn"
    assert out["exit_code"] == 0 and out["error"] is None
    assert set(out["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    }


def test_output_format_json_reports_a_failed_run_with_its_exit_code(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([status(401)]) as server:
        proc = run(server, home, work, "--output-format", "json", "hi")
    assert proc.returncode == 2
    (out,) = jsonl(proc.stdout)
    assert out["exit_code"] == 2 and out["answer"] is None
    assert out["error"].startswith("auth:")


def test_output_format_json_names_a_refusal_before_the_run(tmp_path: Path) -> None:
    """A run refused before anything is sent (a text-only model given an image) still prints
    its one object, with the reason."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    png(work / "shot.png")
    with FaultServer([]) as server:
        proc = run(server, home, work, *JSON, "-i", "shot.png", "hi", model="openai/gpt-4")
    (out,) = jsonl(proc.stdout)
    assert out["exit_code"] == 1 and out["stop_reason"] == "error"
    assert out["error"].startswith("usage: model openai/gpt-4 does not take images")


def test_output_format_text_is_the_answer_only(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("just this")]) as server:
        proc = run(server, home, work, "--output-format", "text", "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "just this\n"


def test_an_unknown_output_format_is_one_line_exit_1(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([]) as server:
        proc = run(server, home, work, "--output-format", "yaml", "hi")
        assert server.requests == []
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "tether: --output-format 'yaml': give one of stream-json, json, text"
    )


def test_output_format_is_a_setting_and_the_flag_wins(tmp_path: Path) -> None:
    """`run.output_format` in a settings file picks the format; `--output-format` overrides it."""
    home, work, config = tmp_path / "home", tmp_path / "work", tmp_path / "config"
    work.mkdir()
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"run": {"output_format": "text"}}))
    with FaultServer([text("from the setting"), text("from the flag")]) as server:
        by_setting = run_cli(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "hi"],
            home,
            cwd=work,
            TETHER_CONFIG_DIR=str(config),
        )
        by_flag = run_cli(
            [*("run", "--model", "openai/m", "--base-url", server.openai_url), *JSON, "hi"],
            home,
            cwd=work,
            TETHER_CONFIG_DIR=str(config),
        )
    assert by_setting.returncode == 0, by_setting.stderr
    assert by_setting.stdout == "from the setting\n"
    (out,) = jsonl(by_flag.stdout)
    assert out["answer"] == "from the flag"


def test_a_mentioned_text_file_is_inlined_and_a_binary_one_is_refused_with_a_note(
    tmp_path: Path,
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "app.py").write_text("print('hi')\n")
    (work / "blob.bin").write_bytes(b"\x00\x01\x02")
    with FaultServer([text("ok")]) as server:
        proc = run(server, home, work, "explain @src/app.py, @src and @blob.bin")
        (req,) = server.requests
    assert proc.returncode == 0, proc.stderr
    user = next(m for m in req["body"]["messages"] if m["role"] == "user")
    content = user["content"]  # Chat Completions joins the text blocks
    assert content == (
        "explain @src/app.py, @src and @blob.bin\n\n"
        "<file path=\"src/app.py\">\nprint('hi')\n</file>\n\n"
        '<folder path="src">\napp.py\n</folder>'
    )
    assert "tether: note: @blob.bin: a binary file (3 bytes), not attached" in proc.stderr


def test_run_name_then_resume_by_name_and_sessions_list_shows_it(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("first"), text("second")]) as server:
        named = run(server, home, work, "--name", "login bug", "hi")
        base = ["run", "--model", "openai/m", "--base-url", server.openai_url]
        resumed = run_cli([*base, "--resume", "login bug", "again"], home, cwd=work)
        assert len(server.requests) == 2
    assert named.returncode == 0 and resumed.returncode == 0, resumed.stderr
    loaded = SessionStore(home / "sessions").load("s1")
    assert [t.text for t in loaded.turns] == ["hi", "first", "again", "second"]
    listed = run_cli(["sessions", "list"], home, cwd=work)
    (row,) = [json.loads(x) for x in listed.stdout.splitlines()]
    assert row["id"] == "s1" and row["name"] == "login bug"
    bad = run_cli(["run", "--name", "", "--no-session", "x"], home, cwd=work)
    assert bad.returncode == 1 and bad.stderr.strip().startswith("tether: ")


def test_chat_resume_without_an_id_is_the_picker_and_bad_names_are_one_line(
    tmp_path: Path,
) -> None:
    from tether.cli.main import bare_resume

    assert bare_resume(["chat", "--resume"]) == ["chat", "--resume="]
    assert bare_resume(["chat", "--resume", "--safe"]) == ["chat", "--resume=", "--safe"]
    assert bare_resume(["chat", "--resume", "work"]) == ["chat", "--resume", "work"]
    assert bare_resume(["run", "--resume"]) == ["run", "--resume"]  # run needs an id
    home = tmp_path / "home"
    missing = run_cli(["chat", "--resume", "no such name"], home, cwd=tmp_path)
    empty = run_cli(["chat", "--name", " "], home, cwd=tmp_path)
    assert missing.returncode == 1 and missing.stderr.startswith("tether: no session no such name")
    assert empty.returncode == 1 and empty.stderr.strip() == "tether: a session name cannot be empty"


def test_a_mention_the_read_deny_list_refuses_is_not_sent_and_a_command_body_s_are(
    tmp_path: Path,
) -> None:
    """`tether run 'look @key.pem'` with `tools.deny_paths: ["**/*.pem"]` sent the key to the
    provider (found by a new user; `read` refused it); now a note, nothing sent. And the `@path`
    words of a command's body are attached as ACP attached them (`tether run` only looked at
    the typed `/review notes.txt`)."""
    home, work, config = tmp_path / "home", tmp_path / "work", tmp_path / "config"
    (config / "commands").mkdir(parents=True)
    work.mkdir()
    (config / "settings.json").write_text(json.dumps({"tools": {"deny_paths": ["**/*.pem"]}}))
    (config / "commands" / "review.md").write_text(
        f"Review @$1 against @style.txt, @{config}/settings.json and @~/.ssh/id_test.\n"
    )
    (work / "key.pem").write_text("PEMSECRET\n")
    (work / ".env").write_text("ENVSECRET=abc\n")
    (work / "notes.txt").write_text("the notes\n")
    (work / "style.txt").write_text("the style\n")
    with FaultServer([text("ok"), text("ok")]) as server:
        denied = run_cli(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session",
             "look @key.pem and @.env"],
            home, cwd=work, TETHER_CONFIG_DIR=str(config),
        )
        command = run_cli(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session",
             "/review notes.txt"],
            home, cwd=work, TETHER_CONFIG_DIR=str(config),
        )
        first, second = (json.dumps(r["body"]) for r in server.requests)
    assert denied.returncode == 0, denied.stderr
    assert "SECRET" not in first
    assert "@key.pem: the file tools' deny list refuses it (**/*.pem), not attached" in denied.stderr
    assert "@.env: the file tools' deny list refuses it" in denied.stderr
    assert command.returncode == 0, command.stderr
    assert "the notes" in second and "the style" in second and "deny_paths" not in second
    assert "@~/.ssh/id_test: a command's text attaches only paths inside the project" in (
        command.stderr
    )


def test_usage_line_and_json_count_the_subagents(tmp_path: Path) -> None:
    """A run whose `task` call ran a subagent: the stderr usage line is the total (each request
    of the loopback server reports 10 in / 5 out: two of the caller's, one of the child's) with
    the child's part named, and the json result carries `children_usage` (trial4: the line left
    the child out, the key was missing)."""
    from kit.faultserver import Step

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    task = Step("tool", tool_name="task", tool_args=json.dumps({"name": "kid", "prompt": "hi"}))
    script = [task, text("hi from the child"), text("done")]
    with FaultServer(script) as server:
        proc = run(server, home, work, *JSON, "delegate")
        assert len(server.requests) == 3, proc.stderr + proc.stdout
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("tether: usage:")]
    assert line.startswith("tether: usage: in 30 / 15 out (subagents: in 10 / 5 out)"), line
    result = json.loads(proc.stdout)
    assert result["usage"]["input_tokens"] == 30 and result["usage"]["output_tokens"] == 15
    assert result["children_usage"]["input_tokens"] == 10
    assert result["children_usage"]["output_tokens"] == 5


def test_json_children_usage_is_null_without_subagents(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("hi")]) as server:
        proc = run(server, home, work, *JSON, "hello")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["children_usage"] is None
    assert "tether: usage: in 10 / 5 out" in proc.stderr and "subagents" not in proc.stderr
