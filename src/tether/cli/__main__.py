"""`python -m tether.cli` runs the `tether` command (signal handlers first)."""

from tether.cli.entry import main

main()
