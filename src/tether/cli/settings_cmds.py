"""The `tether config`, `tether login` and `tether logout` commands, and how `tether run` picks
its provider from the settings.

Owns: the command-line surface of `tether.settings` and `tether.credentials` (prompting for a
key, messages on stderr, exit codes: 0 ok, 1 bad input or settings). Does not own: the schema,
the files, the key stores.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from tether.cli.output import err, fail
from tether.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A `${VAR}` of the settings (`tether.mcp.config` expands them from the stored keys)."""

if TYPE_CHECKING:  # settings and credentials are imported by the commands that use them
    pass

config_app = typer.Typer(
    help="Show and change settings.", no_args_is_help=True, rich_markup_mode=None
)


@config_app.command("show")
def config_show(
    cwd: Annotated[
        Path, typer.Option(help="The project folder (its .tether/settings.json).")
    ] = Path("."),
) -> None:
    """Print the merged settings as JSON: {"sources": [files read], "settings": {...}}."""
    from tether.settings import load_settings

    try:
        loaded = load_settings(cwd.resolve())
    except ConfigError as exc:
        raise fail(exc) from None
    out = {"sources": [str(p) for p in loaded.sources], "settings": loaded.settings.to_json()}
    print(json.dumps(out, indent=2, ensure_ascii=False))


@config_app.command("set")
def config_set(
    key: Annotated[str, typer.Argument(help="Dotted key, e.g. tools.timeout or run.max_turns.")],
    value: Annotated[str, typer.Argument(help='A JSON value, or text taken as a string ("30s").')],
    project: Annotated[
        bool,
        typer.Option("--project", help="Write <cwd>/.tether/settings.json, not the user file."),
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Set one key in the user (default) or project settings file; other keys are kept. A
    project whose files were all approved (or that had none) stays approved: the user made this
    change (`tether trust`)."""
    from tether.settings import parse_cli_value, save_setting
    from tether.settings.trust import keeping_approval

    root = cwd.resolve()
    parsed = parse_cli_value(value)
    try:
        if key.strip() == "model":
            _check_model(parsed, root)
    except ConfigError as exc:
        raise fail(exc) from None
    with keeping_approval(root, enabled=project) as notes:
        try:
            path = save_setting("project" if project else "user", key, parsed, project_dir=root)
        except ConfigError as exc:
            raise fail(exc) from None
    err(f"set {key} in {path}")
    for note in notes:
        err(note)
    if key.strip().startswith("permissions"):
        _rule_warnings(root)


def _check_model(value: object, root: Path) -> None:
    """Refuse a `model` value naming a provider that is neither built in nor configured in the
    settings (as `--model` and a run check it), before anything is written.

    Raises:
        ConfigError: the line the run would give.
    """
    from tether.agent.assembly.build import model_refs
    from tether.settings import load_settings

    try:
        settings = load_settings(root).settings.with_values({"model": value})
    except ConfigError:  # the schema's own refusal comes from save_setting, naming the file
        return
    model_refs(settings)


def _rule_warnings(root: Path) -> None:
    """After a `permissions.*` change: the rules that name no tool, one line each."""
    from tether.cli.permissions_cmds import rule_warnings
    from tether.settings.trust import trusted_settings

    try:
        loaded, refused = trusted_settings(root)
    except ConfigError:
        return
    for line in rule_warnings(loaded, root, trusted=refused is None):
        err(line)


@config_app.command("get")
def config_get(
    key: Annotated[str, typer.Argument(help="Dotted key, e.g. model or tools.timeout.")],
    project: Annotated[
        bool,
        typer.Option("--project", help="Read <cwd>/.tether/settings.json, not the user file."),
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Print one key of the user (default) or project settings file: text as it is, anything
    else as JSON. A key the file does not set is one line on stderr, exit 1 (with the value in
    force, when the settings give one)."""
    from tether.settings import load_settings
    from tether.settings.files import read_setting
    from tether.settings.merge import get_dotted, split_dotted

    root = cwd.resolve()
    try:
        path, found, value = read_setting(
            "project" if project else "user", key, project_dir=root
        )
    except ConfigError as exc:
        raise fail(exc) from None
    if found:
        print(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        return
    try:
        in_force, current = get_dotted(load_settings(root).settings.to_json(), split_dotted(key))
    except (ConfigError, ValueError):
        in_force, current = False, None
    told = f" (in force: {json.dumps(current, ensure_ascii=False)})" if in_force else ""
    err(f"{key} is not set in {path}{told}")
    raise typer.Exit(1)


@config_app.command("unset")
def config_unset(
    key: Annotated[str, typer.Argument(help="Dotted key, e.g. model or tools.timeout.")],
    project: Annotated[
        bool,
        typer.Option("--project", help="Change <cwd>/.tether/settings.json, not the user file."),
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Remove one key from the user (default) or project settings file; other keys are kept.
    A project whose files were all approved stays approved, as with `config set`."""
    from tether.settings.files import remove_setting
    from tether.settings.trust import keeping_approval

    root = cwd.resolve()
    with keeping_approval(root, enabled=project) as notes:
        try:
            path = remove_setting("project" if project else "user", key, project_dir=root)
        except ConfigError as exc:
            raise fail(exc) from None
    err(f"unset {key} in {path}")
    for note in notes:
        err(note)


def login(
    provider: Annotated[
        str, typer.Argument(help="Provider name: anthropic, openai, or a providers.<name>.")
    ],
    key_stdin: Annotated[
        bool, typer.Option("--key-stdin", help="Read the key from the first line of stdin.")
    ] = False,
    store: Annotated[
        Literal["keyring", "file"] | None,
        typer.Option(
            help="Where to store it (default: the system keyring if usable, else the file)."
        ),
    ] = None,
) -> None:
    """Log in to a provider: its own login flow, else store its API key (system keyring, or a
    0600 credential file). Ollama and the embedded model need none."""
    import asyncio

    from tether.credentials import check_provider_name, env_vars_for
    from tether.providers.login import login_provider
    from tether.providers.registry import provider_class
    from tether.settings.files import load_config

    io = _CliLogin(key_stdin)
    try:
        check_provider_name(provider)
        try:
            _, cls = provider_class(provider, providers=load_config(Path.cwd()).providers)
        except ConfigError:  # no adapter: a name the settings use for a key, else refused
            _check_known(provider)
            cls = None
        outcome = asyncio.run(login_provider(cls, provider, io, store=store or "auto"))
    except ConfigError as exc:
        raise fail(exc) from None
    if outcome.where is None:
        return
    err(f"stored the {provider} key in the {outcome.where}: {outcome.place}")
    for var in env_vars_for(provider):
        if os.environ.get(var):
            err(f"note: {var} is set in the environment and is used before the stored key")


class _CliLogin:
    """A login flow's user on the command line: answers from the terminal (hidden), or one
    line of stdin each with `--key-stdin`; lines go to stderr."""

    def __init__(self, from_stdin: bool) -> None:
        self.from_stdin = from_stdin

    def ask(self, prompt: str, *, secret: bool = True) -> str:
        if self.from_stdin:
            return sys.stdin.readline().strip()
        if sys.stdin.isatty():
            return str(typer.prompt(prompt, hide_input=secret))
        raise ConfigError("stdin is not a terminal: pass --key-stdin to read the key from it")

    def say(self, line: str) -> None:
        err(line)


def logout(
    provider: Annotated[str, typer.Argument(help="Provider name used with `tether login`.")],
) -> None:
    """Remove a provider's stored key from the keyring and the credential file; exit 1 when
    there was none."""
    from tether.credentials import env_vars_for, remove_key

    try:
        removed = remove_key(provider)
    except ConfigError as exc:
        raise fail(exc) from None
    if removed:
        err(f"removed the {provider} key from: {', '.join(removed)}")
    else:
        err(f"no stored {provider} key: nothing removed")
    for var in env_vars_for(provider):
        if os.environ.get(var):
            err(f"note: {var} is still set in the environment")
    if not removed:
        raise typer.Exit(1)


def _check_known(provider: str) -> None:
    """Raise ConfigError unless `provider` takes a key: a built-in provider that reads one
    (`DEFAULT_ENV`), a `providers.<name>` of the settings (user and this folder's project), or
    a `${VAR}` they use (an MCP server's, `tether.mcp.config.default_lookup`)."""
    from tether.credentials import DEFAULT_ENV
    from tether.settings import load_settings

    builtin = [name for name, env in DEFAULT_ENV.items() if env]
    try:
        settings = load_settings(Path.cwd()).settings
    except (ConfigError, OSError):  # a broken settings file: the built-in names still hold
        declared: list[str] = []
        variables: list[str] = []
    else:
        declared = sorted(settings.providers)
        variables = sorted(set(_VAR.findall(json.dumps(settings.to_json()))))
    if provider in (*builtin, *declared, *variables):
        return
    raise ConfigError(
        f"unknown provider {provider!r}; use one of: {', '.join([*builtin, *declared])} "
        "(or declare providers.<name> in the settings; an MCP server's ${VAR} is stored "
        "under VAR)"
    )
