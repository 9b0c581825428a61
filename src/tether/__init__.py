"""tether: an agent harness for long sessions."""

__version__ = "0.1.0"
