"""Tool definitions with pydantic-model parameters, and the return shapes: envelopes with
system notes and display values, ToolOutput extras, the `timeout` parameter's schema."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from kit.calls import make_call
from tether.messages import TextBlock
from tether.tools import ToolContext, ToolOutput, ToolRegistry, tool
from tether.tools.exec.outcome import Outcome, to_outcome
from tether.tools.exec.run import run_tool, system_note_block


class Point(BaseModel):
    """A point."""

    x: int
    y: int = Field(0, description="the y coordinate")


class Shape(BaseModel):
    name: str
    points: list[Point]



async def test_pydantic_model_parameters(ctx: ToolContext) -> None:
    got: list[Shape] = []

    @tool(safe=True)
    def area(shape: Shape, scale: float = 1.0) -> str:
        """Measure a shape.

        Args:
            shape: the shape to measure.
        """
        got.append(shape)
        return f"{shape.name}:{len(shape.points)}:{scale}"

    p = area.parameters
    assert "$schema" not in p and "title" not in p and area.safe
    assert p["properties"]["shape"]["$ref"] == "#/$defs/Shape"
    assert p["properties"]["shape"]["description"] == "the shape to measure."
    assert set(p["$defs"]) == {"Shape", "Point"}
    assert p["$defs"]["Point"]["properties"]["y"]["description"] == "the y coordinate"
    assert p["required"] == ["shape"]
    reg = ToolRegistry([area])
    call = make_call("area", shape={"name": "tri", "points": [{"x": 1}, {"x": 2, "y": 3}]})
    r = await run_tool(reg, call, ctx)
    assert r.block.text == "tri:2:1.0" and not r.block.is_error
    assert isinstance(got[0], Shape) and got[0].points[1] == Point(x=2, y=3)
    bad = make_call("area", shape={"name": "tri", "points": [{"y": 1}]})
    r = await run_tool(reg, bad, ctx)
    assert r.block.is_error and "shape.points.0.x" in r.block.text and got[1:] == []


def test_timeout_parameter_schema_and_default_required() -> None:
    @tool
    def build(target: str, timeout: float = 300) -> str:
        return target

    assert build.timeout_param == "timeout"
    prop = build.parameters["properties"]["timeout"]
    assert prop["default"] == 300 and prop["description"] == "time limit in seconds"  # capped: tools.max_timeout
    with pytest.raises(ValueError, match="timeout"):

        @tool
        def no_default(timeout: float) -> str:
            return ""


@pytest.mark.parametrize(
    ("raw", "text", "notes", "display"),
    [
        ({"result": "ok", "system": "note A"}, "ok", ("note A",), None),
        ({"result": "ok", "system": ["a", " ", "b"]}, "ok", ("a", "b"), None),
        ({"result": [TextBlock(text="t")], "display": {"diff": "+x"}}, "t", (), {"diff": "+x"}),
        ({"result": {"n": 1}}, '{"n": 1}', (), None),
        ({"result": "r", "other": 1}, '{"result": "r", "other": 1}', (), None),  # not an envelope
        ({"answer": 1}, '{"answer": 1}', (), None),
        (ToolOutput("x", system="s", display=[1, 2]), "x", ("s",), [1, 2]),
        (
            {"result": ToolOutput("x", system="inner"), "system": "outer"},
            "x",
            ("outer", "inner"),
            None,
        ),
    ],
)
def test_return_shapes(raw: object, text: str, notes: tuple[str, ...], display: object) -> None:
    o = to_outcome(raw)
    assert "\n".join(p.text for p in o.parts if isinstance(p, TextBlock)) == text
    assert o.system_notes == notes and o.display == display


def test_display_is_made_json_safe_and_outcome_round_trips() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    o = to_outcome({"result": "r", "display": {"obj": Odd()}, "system": "n"})
    assert o.display == {"obj": "odd"}
    assert Outcome.from_json(o.to_json()) == o


async def test_system_notes_and_display_never_enter_the_block(ctx: ToolContext) -> None:
    @tool
    def diffing() -> dict[str, object]:
        return {"result": "", "system": "sk-ant-" + "a" * 30, "display": {"secret": "shown"}}

    from tether.tools import redact_secrets

    r = await run_tool(ToolRegistry([diffing]), make_call("diffing"), ctx, redact=redact_secrets)
    assert r.block.text == "(no output)" and "shown" not in r.block.text
    assert r.system_notes == ("[REDACTED]",) and r.display == {"secret": "shown"}
    assert system_note_block("  hello\n") == TextBlock(
        text="<system-reminder>\nhello\n</system-reminder>"
    )
