"""The `question` tool in an editor (`tether.acp.questions`), with a real `tether acp` process
and the SDK's own client: a client that takes forms gets one `elicitation/create` (a field per
question, the free-text field beside it) and its answer reaches the model; a client without
forms gets one permission prompt per question, the question as its title, an option per choice
and Skip. Before the bridge, the tool answered as in a headless run ("No user is available")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp.connection import StreamEvent

import acp
from acp import schema
from kit.acp import Project, SchemaLog, acp_project
from kit.faultserver import text, tool
from tether.acp.questions import answers_of, form_schema
from tether.session import SessionStore
from tether.tools.context import ABANDONED, Answer, OptionSpec, QuestionSpec

QUESTIONS: list[dict[str, Any]] = [
    {
        "header": "Database",
        "question": "Which database should the app use?",
        "options": [
            {"label": "SQLite", "description": "a file, no server"},
            {"label": "PostgreSQL", "description": "a server"},
        ],
    },
    {
        "header": "Extras",
        "question": "Which extras?",
        "options": [{"label": "auth"}, {"label": "admin"}, {"label": "api"}],
        "multi_select": True,
    },
]
SCRIPT = [tool("question", questions=QUESTIONS), text("Noted.")]


class Client:
    """Answers forms with `form` (None: declines) and permission prompts with `picks`."""

    def __init__(self, form: dict[str, Any] | None, picks: list[str]) -> None:
        self.form = form
        self.picks = picks
        self.forms: list[Any] = []
        self.prompts: list[tuple[schema.ToolCallUpdate, list[Any]]] = []
        self.updates: list[Any] = []

    def on_connect(self, conn: acp.Agent) -> None:
        del conn

    async def create_elicitation(self, message: str, mode: Any, **kw: Any) -> Any:
        self.forms.append((message, mode))
        # the wire shape (the SDK's response models leave out the `action` discriminator)
        if self.form is None:
            return {"action": "decline"}
        return {"action": "accept", "content": self.form}

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[Any], **kw: Any
    ) -> schema.RequestPermissionResponse:
        self.prompts.append((tool_call, options))
        pick = self.picks.pop(0)
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=pick)
        )

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)


async def _ask(project: Project, client: Client, caps: schema.ClientCapabilities) -> Any:
    log = SchemaLog()

    def observe(event: StreamEvent) -> None:
        log.check("in" if event.direction.value == "incoming" else "out", event.message)

    with project.stderr.open("wb") as errlog:
        async with acp.spawn_agent_process(
            client,  # pyright: ignore[reportArgumentType]  # a partial client: the SDK answers method-not-found for the rest
            *project.argv(),
            env=project.env(),
            cwd=project.work,
            transport_kwargs={"stderr": errlog.fileno()},
            observers=[observe],
            # a client that declares forms speaks ACP's unstable elicitation methods
            use_unstable_protocol=caps.elicitation is not None,
        ) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps)
            new = await conn.new_session(cwd=str(project.work), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("set up")])
            assert done.stop_reason == "end_turn"
            sid = new.session_id
    stored = SessionStore(project.home / "sessions").load(sid).turns
    result = next(r for t in stored for r in t.tool_results)
    return json.loads(result.text)


@pytest.mark.slow
async def test_a_client_with_forms_answers_in_one_form(tmp_path: Path) -> None:
    form = {"q1": "PostgreSQL", "q2": ["auth", "api"], "q1_other": "", "q2_other": ""}
    client = Client(form, [])
    caps = schema.ClientCapabilities(
        elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
    )
    with acp_project(tmp_path, SCRIPT) as project:
        answers = await _ask(project, client, caps)
    assert answers == [
        {"header": "Database", "labels": ["PostgreSQL"]},
        {"header": "Extras", "labels": ["auth", "api"]},
    ]
    assert len(client.forms) == 1 and client.prompts == []
    _message, mode = client.forms[0]
    start = next(u for u in client.updates if isinstance(u, schema.ToolCallStart))
    assert mode.tool_call_id == start.tool_call_id  # the form is about the question call
    props = mode.requested_schema.properties
    assert set(props) == {"q1", "q1_other", "q2", "q2_other"}


@pytest.mark.slow
async def test_a_client_without_forms_gets_a_permission_prompt_per_question(
    tmp_path: Path,
) -> None:
    client = Client(None, ["o1", "skip"])
    with acp_project(tmp_path, SCRIPT) as project:
        answers = await _ask(project, client, schema.ClientCapabilities())
    assert answers == [
        {"header": "Database", "labels": ["PostgreSQL"]},
        {"header": "Extras", "abandoned": True},
    ]
    assert client.forms == []
    (first, first_options), (second, _) = client.prompts
    assert first.title == "Database: Which database should the app use?"
    assert [o.name for o in first_options] == [
        "SQLite",
        "PostgreSQL",
        "Skip (let the agent decide)",
    ]
    assert second.title == "Extras: Which extras?"
    start = next(u for u in client.updates if isinstance(u, schema.ToolCallStart))
    assert first.tool_call_id == start.tool_call_id


def _q(multi: bool = False) -> QuestionSpec:
    return QuestionSpec(
        header="H",
        question="Q?",
        options=[OptionSpec(label="a"), OptionSpec(label="b")],
        multi_select=multi,
    )


def test_form_answers_keep_only_offered_labels_then_free_text_then_abandoned() -> None:
    qs = [_q(), _q(multi=True), _q(), _q()]
    content = {"q1": "b", "q2": ["a", "zzz", "b"], "q3": "zzz", "q3_other": " my own ", "q4": ""}
    assert answers_of(qs, content) == [
        Answer(labels=("b",)),
        Answer(labels=("a", "b")),
        Answer(text="my own"),
        ABANDONED,
    ]
    assert answers_of(qs, None) == [ABANDONED] * 4


def test_the_form_schema_validates_as_the_sdk_models_it() -> None:
    built = form_schema([_q(), _q(multi=True)])
    dumped = built.model_dump(by_alias=True, exclude_none=True)
    assert dumped["properties"]["q1"]["oneOf"] == [
        {"const": "a", "title": "a"},
        {"const": "b", "title": "b"},
    ]
    assert dumped["properties"]["q2"]["type"] == "array"
    assert schema.ElicitationSchema.model_validate(dumped) == built
