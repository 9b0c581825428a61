"""Construction: settings and models into an agent's parts (see docs/architecture.md)."""
