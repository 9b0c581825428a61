"""The final answer in a schema (`run.output_schema`, `tether run --output-schema FILE`).

Owns: `load_schema` (the setting → a checked JSON Schema), `parse_answer` (pure: an answer's
text → the parsed object or the reason it is not valid) and `OutputSchemaPolicy`, one run's
state shaped as a turn policy (`on_prompt`, `after_reply`, `after_run`): after a final text
reply that does not parse as JSON or does not validate, the run sends a user message naming
the error and asks again, at most `run.output_schema_retries` times; then it stops with stop
reason `schema_invalid`. A valid answer's parsed object is the run's `structured` result
(`RunResult.structured`, the `done` event's `structured`).
Does not own: the loop that sends the message (`tether.agent.turn.loop`), the CLI's exit code.

Leniency: a reply that is one fenced code block (```json … ```) is read as the block's body;
anything else must be the JSON value alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import jsonschema.exceptions
import jsonschema.validators

from tether.agent.turn.policy import TurnPolicy
from tether.errors import ConfigError
from tether.messages import ContentBlock, Turn
from tether.settings.model import RunSettings

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["SCHEMA_RETRY", "OutputSchemaPolicy", "load_schema", "parse_answer"]

# jsonschema's functions are untyped in part: used through `Any`, the results checked here
_validators: Any = cast(Any, jsonschema.validators)
_exceptions: Any = cast(Any, jsonschema.exceptions)

SCHEMA_RETRY = (
    "Your final answer must be a single JSON value that validates against the output schema "
    "given for this run, with no other text. It did not: {error}. Reply again with only the "
    "corrected JSON.\n\nThe schema:\n{schema}"
)
"""The user message sent after an answer that does not validate."""


def load_schema(value: str | dict[str, Any] | None, root: Path) -> dict[str, Any] | None:
    """The schema `value` names: an inline object, or a path to a JSON file (relative to
    `root`); None when unset.

    Raises:
        ConfigError: the file is missing or not JSON, or the schema itself is not a valid
            JSON Schema (one line naming which).
    """
    if value is None:
        return None
    if isinstance(value, str):
        path = Path(value).expanduser()
        path = path if path.is_absolute() else root / path
        try:
            loaded: object = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"output schema {value}: cannot read it ({exc.strerror})") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"output schema {value}: not JSON ({exc})") from None
        where = str(value)
    else:
        loaded, where = value, "run.output_schema"
    if not isinstance(loaded, dict):
        raise ConfigError(f"output schema {where}: a JSON Schema is an object")
    schema = cast(dict[str, Any], loaded)
    try:
        _validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        message = str(cast(Any, exc).message)
        raise ConfigError(f"output schema {where}: not a valid JSON Schema: {message}") from None
    return schema


def _unfenced(text: str) -> str:
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and body.count("```") == 2:
        body = body[3:-3]
        first, _, rest = body.partition("\n")
        body = rest if first.strip().isalnum() or not first.strip() else body
    return body.strip()


def parse_answer(text: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """`text` read as JSON and checked against `schema`: (the object, None) when valid, else
    (None, the reason in one line: where the JSON is broken or the first validation error
    with its path)."""
    body = _unfenced(text)
    if not body:
        return None, "the answer was empty, not JSON"
    try:
        value: Any = json.loads(body)
    except ValueError as exc:
        return None, f"the answer is not JSON ({exc})"
    validator: Any = _validators.validator_for(schema)(schema)
    error: Any = _exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return value, None
    path: list[object] = list(error.absolute_path)
    where = "/".join(str(p) for p in path) or "(the top level)"
    return None, f"at {where}: {error.message!s}"


@dataclass(slots=True)
class OutputSchemaPolicy(TurnPolicy):
    """One run's output-schema check (a turn policy: `on_prompt`, `after_reply`, `after_run`).

    Args:
        schema: the checked schema (`load_schema`).
        retries: how many times the run asks again after an answer that does not validate.

    Attributes:
        structured: the valid answer's parsed object (None until one validated).
        asked: how many times the run asked again so far.
        failed: the last answer did not validate and the retries were spent.
        source: the `run.output_schema` setting the schema was loaded from (a settings change
            that leaves it and the retries alone keeps this policy and its counts).
    """

    schema: dict[str, Any]
    retries: int = 2
    structured: Any = None
    asked: int = 0
    failed: bool = False
    error: str | None = field(default=None)
    source: object = field(default=None, compare=False)

    @classmethod
    def of(cls, run: RunSettings, root: Path) -> OutputSchemaPolicy | None:
        """The policy of a run under the `run` settings section, or None without a schema.

        Raises:
            ConfigError: the schema cannot be loaded (`load_schema`).
        """
        schema = load_schema(run.output_schema, root)
        if schema is None:
            return None
        return cls(schema, retries=run.output_schema_retries, source=run.output_schema)

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """A run starts: nothing validated, nothing asked."""
        self.structured, self.asked, self.failed, self.error = None, 0, False, None
        return content

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """A final reply (no tool calls): None when the run may end (the answer validated:
        `structured` holds it; or the retries are spent: `failed`), else the user message that
        asks again."""
        if turn.tool_calls:
            return None
        value, error = parse_answer(state.answer, self.schema)
        self.error = error
        if error is None:
            self.structured, self.failed = value, False
            return None
        if self.asked >= self.retries:
            self.failed = True
            return None
        self.asked += 1
        return SCHEMA_RETRY.format(error=error, schema=json.dumps(self.schema, indent=2))

    def after_run(self, parts: RunParts, state: RunState) -> None:
        """`schema_invalid` when the last answer did not validate and the retries were spent;
        the valid answer's object as the run's `structured` result."""
        if self.failed and state.stop_reason in ("end_turn", "stop_sequence"):
            state.stop_reason = "schema_invalid"
        state.structured = self.structured
