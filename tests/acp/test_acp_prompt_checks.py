"""What `session/prompt` refuses before anything is sent or stored (trial4): an image block that
is not base64 or not an image (a real provider answers 400, and the stored block would make
every later request of the session 400 too), and an empty prompt (a paid request of
"(no content)"). Each is a JSON-RPC -32602 with a one-line `details`; the session goes on."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from kit.acp import AcpPipe, acp_project
from kit.faultserver import text


def _png() -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 10, 10)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def test_bad_images_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    with acp_project(tmp_path, [text("a red square")]) as project, AcpPipe(project) as pipe:
        sid = pipe.start(project.work)
        look = {"type": "text", "text": "look"}
        bad = {
            "!!!notbase64": "not valid base64",
            "aGVsbG8=": "not a readable image",  # "hello" labelled image/png
        }
        for data, why in bad.items():
            image = {"type": "image", "mimeType": "image/png", "data": data}
            reply = pipe.call("session/prompt", {"sessionId": sid, "prompt": [look, image]})
            assert reply["error"]["code"] == -32602, reply
            details = reply["error"]["data"]["details"]
            assert why in details and "block 2" in details and "\n" not in details
        assert project.server.requests == []  # nothing paid for
        good = {"type": "image", "mimeType": "image/png", "data": _png()}
        reply = pipe.call("session/prompt", {"sessionId": sid, "prompt": [look, good]})
        assert reply["result"]["stopReason"] == "end_turn", reply
        (sent,) = project.server.requests
        wire = json.dumps(sent["body"])
        assert "notbase64" not in wire and "aGVsbG8=" not in wire
        assert _png()[:40] in wire  # the good image went as it came


def test_an_empty_prompt_is_refused_and_nothing_is_sent(tmp_path: Path) -> None:
    """`"prompt": []` (or blank text only) is refused as `tether run ''` is; the session goes
    on."""
    with acp_project(tmp_path, [text("hi")]) as project, AcpPipe(project) as pipe:
        sid = pipe.start(project.work)
        for empty in ([], [{"type": "text", "text": "  \n"}]):
            reply = pipe.call("session/prompt", {"sessionId": sid, "prompt": empty})
            assert reply["error"]["code"] == -32602, reply
            assert reply["error"]["data"]["details"] == "empty prompt"
        assert project.server.requests == []
        hello = [{"type": "text", "text": "hello"}]
        reply = pipe.call("session/prompt", {"sessionId": sid, "prompt": hello})
        assert reply["result"]["stopReason"] == "end_turn", reply
        assert len(project.server.requests) == 1
