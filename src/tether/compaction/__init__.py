"""tether.compaction — context management: pressure, compaction, recall, the tail strategy.

Pure modules (no I/O, clocks or random ids; inputs never mutated): `pressure`, `monitor`,
`windows` (when to compact), `rounds` (what a compaction replaces: whole rounds, scopes, the
original task), `prompt` (the summary prompt and transcript), `tail` (wire-only shortening of old
tool results, the `Compactor` hook), `restore` (which read files to restore).
Edges: `summarize` (the summary call to a provider), `recall` (the `recall` tool).
The loop integration lives in `tether.agent.context`. Imports nothing from `agent`/`cli`.
"""
