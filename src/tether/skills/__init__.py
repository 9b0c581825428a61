"""Agent Skills (agentskills.io) and user commands.

Modules: `spec` (pure: `SKILL.md` and prompt-file frontmatter, the spec's rules), `catalog`
(finding skills, the `skills` settings, tether's own skill), `tool` (the `skill` tool and the
read-only skill folders), `commands` (`/name args` from prompt files and skills; pure
substitution of `$ARGUMENTS` and `$1`…`$9`).
"""
