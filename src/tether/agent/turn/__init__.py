"""The turn: the loop and the parts that act on each turn (see docs/architecture.md)."""
