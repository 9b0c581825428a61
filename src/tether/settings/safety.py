"""The settings sections of the safety net for long sessions: `checkpoints` and
`permissions` (`run.max_budget_usd` is in `tether.settings.model.RunSettings`).

Owns: `CheckpointSettings`, `PermissionsSettings` (each rule checked when the file is read: an
unparsable rule refuses the file, naming the rule). Kept beside `tether.settings.model`, which
holds them as `AgentConfig.checkpoints` / `AgentConfig.permissions`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tether.settings.rules import parse_rule


class _SafetySection(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_alias=True, validate_by_name=True
    )


class CheckpointSettings(_SafetySection):
    """`checkpoints`: snapshots of the working folder before a user turn's first change, so
    a session can be rewound (`tether.checkpoint`, `tether sessions rewind`).

    Attributes:
        enabled: take snapshots (in a shadow git repository under the data folder; needs git).
        max_file_size: files larger than this (bytes) are left out of snapshots, with a
            warning (and never removed by a rewind).
    """

    enabled: bool = True
    max_file_size: int = Field(default=10 * 1024 * 1024, ge=1)


def _check_rules(value: list[str]) -> list[str]:
    for text in value:
        parse_rule(text)
    return value


RuleList = Annotated[list[str], AfterValidator(_check_rules)]


class PermissionsSettings(_SafetySection):
    """`permissions`: rules that let tool calls run unasked, always ask, or refuse them
    (`tether.permissions.rules`; deny > ask > allow). Each rule is `tool` or `tool(pattern)`:
    `bash(pytest *)`, `edit(src/**)`, `mcp__github__*`, `web_fetch(domain:docs.python.org)`.
    A project's rules load only once the project is approved (`tether trust`).

    Attributes:
        allow: calls that run without asking.
        ask: calls that are always asked (a headless run refuses them, naming the rule).
        deny: calls that are refused.
    """

    allow: RuleList = Field(default_factory=list[str])
    ask: RuleList = Field(default_factory=list[str])
    deny: RuleList = Field(default_factory=list[str])
