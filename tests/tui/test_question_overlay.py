"""The question overlay (`tether.tui.question`): nothing is answered before Submit, several
questions are reviewed then submitted, previews are highlighted as the transcript's code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Markdown, OptionList, Static
from textual.widgets._markdown import MarkdownFence  # pyright: ignore[reportPrivateUsage]

from kit.tui import QUESTIONS, SIZE, idle, scripted_app, send, until
from tether.testing import call
from tether.tui.app import TetherApp
from tether.tui.screens import QuestionScreen


async def overlay(app: TetherApp, pilot: Pilot[Any]) -> QuestionScreen:
    await send(pilot, "ask me")
    await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
    screen = app.screen
    assert isinstance(screen, QuestionScreen)
    return screen


def shown(screen: QuestionScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def highlighted(screen: QuestionScreen) -> str:
    options = screen.query_one("#options", OptionList)
    assert options.highlighted is not None
    return str(options.get_option_at_index(options.highlighted).prompt)


def sent(provider: Any) -> list[dict[str, Any]]:
    return json.loads(provider.requests[1].messages[-1].tool_results[0].text)


async def test_enter_selects_and_only_submit_commits(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, [call("question", questions=QUESTIONS[:1]), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await overlay(app, pilot)
        await pilot.press("end", "enter")  # Submit with nothing chosen: a hint, still open
        await pilot.pause()
        assert app.screen is screen and "choose an option" in shown(screen, "#hint")
        await pilot.press("home", "enter")  # "small" selected: the highlight moves to Submit
        await pilot.pause()
        assert app.screen is screen and len(provider.requests) == 1
        assert highlighted(screen) == "Submit"
        assert "(•) small" in str(screen.query_one("#options", OptionList).get_option_at_index(0).prompt)
        await pilot.press("enter")
        await idle(app, pilot)
    assert sent(provider) == [{"header": "Plan", "labels": ["small"]}]


async def test_several_questions_are_reviewed_then_submitted(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, [call("question", questions=QUESTIONS), "thanks"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await overlay(app, pilot)
        assert "Plan" in shown(screen, "#chip") and "Submit" in shown(screen, "#chip")
        await pilot.press("down", "enter")  # "big", then the Next row
        await pilot.pause()
        assert highlighted(screen) == "Next ›"
        await pilot.press("enter")
        await pilot.pause()
        assert "Which parts?" in shown(screen, "#question")
        await pilot.press("enter", "down", "down", "space")  # api + docs (Enter toggles too)
        await pilot.press("end", "enter")
        await pilot.pause()
        await pilot.press("tab", *"carol", "enter")  # a typed answer, then the review row
        await pilot.pause()
        assert highlighted(screen) == "Review answers ›"
        await pilot.press("enter")
        await pilot.pause()
        review = "\n".join(str(o.prompt) for o in screen.query_one("#options", OptionList).options)
        assert "Plan: big" in review and "Parts: api, docs" in review and "Name: carol" in review
        assert len(provider.requests) == 1  # nothing sent while reviewing
        await pilot.press("home", "enter")  # back to Plan from the review
        await pilot.pause()
        assert "Which plan?" in shown(screen, "#question")
        await pilot.press("home", "enter", "right", "right", "right")  # "small"; ← → pages
        await pilot.pause()
        assert "Review your answers" in shown(screen, "#question")
        await pilot.press("end", "enter")
        await idle(app, pilot)
    assert sent(provider) == [
        {"header": "Plan", "labels": ["small"]},
        {"header": "Parts", "labels": ["api", "docs"]},
        {"header": "Name", "text": "carol"},
    ]


async def test_description_and_preview_only_while_highlighted(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [call("question", questions=QUESTIONS[:1]), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await overlay(app, pilot)
        preview = screen.query_one("#preview", Markdown)
        assert "one file" in shown(screen, "#description")
        assert preview.display and "PREVIEW-SMALL" in preview.source
        await pilot.press("down")
        await pilot.pause()
        assert "many files" in shown(screen, "#description")
        assert not preview.display


CODE = "def greet(name: str) -> str:\n    return f'hello {name}'\n"


async def test_previews_are_highlighted_like_the_transcript(tmp_path: Path) -> None:
    question = {
        "header": "Impl",
        "question": "Which one?",
        "options": [
            {"label": "fenced", "preview": f"Plain **words**.\n\n```python\n{CODE}```"},
            {"label": "bare", "preview": CODE},
        ],
    }
    app, _ = scripted_app(tmp_path, [call("question", questions=[question]), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await overlay(app, pilot)
        for _ in range(2):
            await until(pilot, lambda: bool(screen.query(MarkdownFence)))
            fence = screen.query_one(MarkdownFence)
            assert "def greet" in fence.code
            assert fence._highlighted_code.spans  # pyright: ignore[reportPrivateUsage]
            await pilot.press("down")  # the bare preview: a code block too, its language guessed
            await pilot.pause()


async def test_up_from_the_typed_answer_goes_back_to_the_options(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [call("question", questions=QUESTIONS[:1]), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await overlay(app, pilot)
        await pilot.press("tab")
        assert screen.focused is not None and screen.focused.id == "free"
        await pilot.press("up")
        await pilot.pause()
        assert isinstance(screen.focused, OptionList)


async def test_a_digit_picks_that_option(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, [call("question", questions=QUESTIONS[:2]), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await overlay(app, pilot)
        assert "1. ( ) small" in highlighted(screen)
        await pilot.press("2")  # "big", then the Next row
        await pilot.pause()
        assert highlighted(screen) == "Next ›" and len(provider.requests) == 1
        await pilot.press("enter", "1", "3", "end", "enter")  # Parts: api and docs toggled
        await pilot.pause()
        await pilot.press("end", "enter")
        await idle(app, pilot)
    assert sent(provider) == [
        {"header": "Plan", "labels": ["big"]},
        {"header": "Parts", "labels": ["api", "docs"]},
    ]
