"""The one typed configuration of an agent: `AgentConfig`, its sections, and loading it.

`AgentConfig` IS the settings model (`tether.settings.model`): a settings file parses into it,
`tether run`'s flags override its fields (`AgentConfig.with_values`), and
`tether.Agent(model, config=...)` consumes it. Sections mirror `settings.json`:

    model       the model selection (a string, or a list tried in order)
    providers   named endpoints (`ProviderSettings`: type, base_url, model, api_key_env)
    retry       attempts and backoff per request (`RetrySettings`)
    tools       timeout, output threshold, refused env names, deny paths, network, safe mode,
                tool folders, OS sandbox (`ToolsSettings`)
    context     windows, compaction trigger and guards, auto_compact, window override
                (`ContextSettings`)
    run         max_turns, continuation_limit, thinking budget and decay, system prompt,
                max_output_tokens, temperature (`RunSettings`)

A new feature adds its section the same way: one `XSettings(_Section)` class in
`tether.settings.model` and one field on `AgentConfig`.
"""

from __future__ import annotations

from pathlib import Path

from tether.settings.files import load_settings
from tether.settings.model import (
    AgentConfig,
    ContextSettings,
    ModelEntry,
    ModelWindow,
    ProviderSettings,
    RetrySettings,
    RunSettings,
    ThinkingSettings,
    ToolsSettings,
)

__all__ = [
    "AgentConfig",
    "ContextSettings",
    "ModelEntry",
    "ModelWindow",
    "ProviderSettings",
    "RetrySettings",
    "RunSettings",
    "ThinkingSettings",
    "ToolsSettings",
    "load_config",
]


def load_config(cwd: Path | str = ".") -> AgentConfig:
    """The config the settings files give for the project folder `cwd` (user file, then
    `<cwd>/.tether/settings.json`; see `tether.settings`).

    Raises:
        ConfigError: a malformed or invalid settings file (names the file and the place).
    """
    return load_settings(Path(cwd)).settings
