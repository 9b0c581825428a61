"""Permission rules: which tool calls run without asking, are asked, or are refused.

`rules` (the grammar, the rule set, a call's decision, "always allow" suggestions; pure),
`shell` (a command line split into the commands it runs, with tree-sitter-bash; pure),
`store` (adding an allow rule to the user settings file), `content` (the `write` content
trip-wire: the existing paths outside the project a content names). Where a decision is applied:
`tether.agent.approval`.
"""
