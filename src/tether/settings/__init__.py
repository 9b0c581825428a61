"""Settings: JSON files merged from the user folder and the project folder, validated into a
typed `AgentConfig`: the one config an agent takes.

Files (the project wins):
    <user config dir>/settings.json        `TETHER_CONFIG_DIR` or platformdirs' config dir
    <project>/.tether/settings.json

Merge: objects deep-merge; arrays concatenate (project items first, duplicates kept); any other
value from the project replaces the user's. See `tether.settings.merge`.

    loaded = load_settings(Path.cwd())
    loaded.settings.tools.timeout_s      # 120.0 (seconds)
    loaded.sources                       # the files read

Modules: `model` (the schema), `durations` (pure), `merge` (pure), `files` (I/O).
"""

from tether.durations import format_duration, parse_duration
from tether.errors import DurationError
from tether.settings.files import (
    CONFIG_DIR_ENV,
    LoadedSettings,
    SettingsScope,
    load_config,
    load_settings,
    parse_cli_value,
    save_setting,
    settings_path,
    user_config_dir,
)
from tether.settings.merge import merge_layers
from tether.settings.model import (
    AgentConfig,
    ContextSettings,
    ModelEntry,
    ModelWindow,
    ProviderSettings,
    ProviderType,
    RetrySettings,
    RunSettings,
    ThinkingSettings,
    ToolsSettings,
)

__all__ = [
    "CONFIG_DIR_ENV",
    "AgentConfig",
    "ContextSettings",
    "DurationError",
    "LoadedSettings",
    "ModelEntry",
    "ModelWindow",
    "ProviderSettings",
    "ProviderType",
    "RetrySettings",
    "RunSettings",
    "SettingsScope",
    "ThinkingSettings",
    "ToolsSettings",
    "format_duration",
    "load_config",
    "load_settings",
    "merge_layers",
    "parse_cli_value",
    "parse_duration",
    "save_setting",
    "settings_path",
    "user_config_dir",
]
