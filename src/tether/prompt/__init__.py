"""What the model is told: the default system prompt, the environment block, the instruction
files (`AGENTS.md` / `CLAUDE.md` with `@path` imports) and the skills listing.

Modules: `facts` (the data, stored with the session as its `context` event), `system` (pure:
the prompt from the facts), `imports` (pure: `@path` imports and the size cap), `gather` (the
edge: git, the date, reading instruction files; subfolder files added as the agent touches
them).
"""
