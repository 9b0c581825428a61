"""`tether permissions ...`: the permission rules (`tether.permissions`).

    check 'bash(rm -rf build)' [--cwd DIR]   the decision for that call and the rule that made
                                             it, with the file it came from
    list [--cwd DIR]                         the rules in force, one per line, with their file

The call is written like a rule: `tool(argument)`, the argument being the command of `bash`,
the path of `read` / `write` / `edit` / `ls` / `glob` / `grep`, a URL for a tool taking one, else
any string. The rules are the user settings' and, once the project is approved (`tether
trust`), the project's. Output: `decision<TAB>rule<TAB>file` on stdout, the reason on stderr.
Exit codes: 0 · 1 a call or settings file that does not parse (one line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, cast

import typer

from tether.cli.output import EXIT_USAGE, err
from tether.errors import ConfigError

permissions_app = typer.Typer(
    help="Check and list the permission rules (allow / ask / deny).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

PATH_TOOLS = ("read", "write", "edit", "ls", "glob", "grep")


def call_arguments(tool: str, argument: str | None) -> dict[str, Any]:
    """The arguments of the call `tool(argument)` as `check` writes it (module docstring)."""
    if argument is None:
        return {}
    if tool == "bash":
        return {"command": argument}
    if tool in PATH_TOOLS:
        return {"path": argument}
    if argument.startswith(("http://", "https://")):
        return {"url": argument}
    return {"input": argument}


def _rules_with_sources(cwd: Path) -> tuple[Any, dict[str, str], str | None]:
    """The merged rules, each rule's file, and the untrusted-project note (or None)."""
    from tether.permissions.rules import Rules
    from tether.settings.trust import trusted_settings

    loaded, refused = trusted_settings(cwd)
    sources: dict[str, str] = {}
    for path, layer in zip(loaded.sources, loaded.layers, strict=True):
        section: Any = layer.get("permissions")
        if not isinstance(section, dict):
            continue
        lists = cast(dict[str, Any], section)
        for action in ("allow", "ask", "deny"):
            texts: Any = lists.get(action) or []
            for text in cast(list[Any], texts) if isinstance(texts, list) else []:
                sources.setdefault(f"{action}:{str(text).strip()}", str(path))
    for line in rule_warnings(loaded, cwd, trusted=refused is None):
        err(line)
    p = loaded.settings.permissions
    return Rules.of(p.allow, p.ask, p.deny), sources, refused


def rule_warnings(loaded: Any, root: Path, *, trusted: bool) -> list[str]:
    """The warning lines of the rules naming no tool (`build.unknown_rules`), the tool
    folders' tools counted (their files failing to load: the built-ins alone)."""
    from tether.agent.assembly import build

    try:
        tools = build.folder_tools(loaded.settings, root, project_tools=trusted)
    except ConfigError:
        tools = []
    return build.unknown_rules(loaded, tools)


@permissions_app.command("check")
def permissions_check(
    call: Annotated[str, typer.Argument(help="The call, as tool(argument): 'bash(rm -rf build)'.")],
    cwd: Annotated[Path, typer.Option(help="The project folder.")] = Path("."),
) -> None:
    """Print the decision the rules make for a call and the rule that made it."""
    from tether.errors import RuleError
    from tether.permissions.rules import parse_rule

    root = cwd.resolve()
    try:
        parsed = parse_rule(call)
        rules, sources, refused = _rules_with_sources(root)
    except (RuleError, ConfigError) as exc:
        err(str(exc).replace("permission rule", "call"))
        raise typer.Exit(EXIT_USAGE) from None
    if refused is not None:
        err(f"note: {refused}")
    decision = rules.decide(parsed.tool, call_arguments(parsed.tool, parsed.pattern), str(root))
    action = decision.action or "none"
    rule = decision.rule.text if decision.rule is not None else "-"
    source = sources.get(f"{decision.action}:{rule}", "-") if decision.rule is not None else "-"
    print(f"{action}\t{rule}\t{source}")
    if decision.action is None:
        left = ", ".join(f"`{p}`" for p in decision.unmatched)
        err(
            "no rule decides"
            + (f" (no rule matches {left})" if left else "")
            + ": the approval mode does (headless runs run it unasked)"
        )
    else:
        err(decision.reason)


@permissions_app.command("list")
def permissions_list(
    cwd: Annotated[Path, typer.Option(help="The project folder.")] = Path("."),
) -> None:
    """Print the rules in force: `action<TAB>rule<TAB>file`, deny first."""
    try:
        rules, sources, refused = _rules_with_sources(cwd.resolve())
    except ConfigError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    if refused is not None:
        err(f"note: {refused}")
    listed = 0
    for action in ("deny", "ask", "allow"):
        for rule in rules.listed(action):
            listed += 1
            print(f"{action}\t{rule.text}\t{sources.get(f'{action}:{rule.text}', '-')}")
    if not listed:  # stdout stays empty for scripts; a person is told why
        err("no permission rules (permissions.allow / ask / deny in a settings file)")
