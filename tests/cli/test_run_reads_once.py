"""`tether run` reads each file its prompt names once: an `@notes.txt` and a `--image` were read
before setup (only to refuse a bad image early) and again when attached. Counted with an audit
hook on `open`, in process."""

from __future__ import annotations

import sys
from pathlib import Path

from test_run_images_and_formats import png

from kit.cli import run_cli
from kit.faultserver import FaultServer, text

_opened: list[str] = []
_watch: set[str] = set()


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and args and str(args[0]) in _watch:
        _opened.append(str(args[0]))


sys.addaudithook(_hook)  # hooks cannot be removed: it records only the paths `_watch` names


def test_each_named_file_is_read_once(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    notes, shot, pic = work / "notes.txt", work / "shot.png", work / "pic.png"
    notes.write_text("Call Alice at 5pm.\n")
    png(shot)
    png(pic, color="blue")
    _watch.update({str(p) for p in (notes, shot, pic)} | {"notes.txt", "shot.png", "pic.png"})
    try:
        with FaultServer([text("ok")]) as server:
            args = ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session"]
            done = run_cli([*args, "--image", "shot.png", "sum up @notes.txt and @pic.png"], home, cwd=work)
            (request,) = server.requests
    finally:
        _watch.clear()
    assert done.returncode == 0, done.stderr
    assert "Call Alice at 5pm." in str(request["body"]) and str(request["body"]).count("image_url") >= 2
    assert sorted(Path(p).name for p in _opened) == ["notes.txt", "pic.png", "shot.png"], _opened
