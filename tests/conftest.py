"""Shared test setup. Its presence puts `tests/` on sys.path (pytest's prepend import mode), so
tests in any folder can import the shared helpers here (`faultserver`, `cases_loader`)."""
