"""Checkpoints of the working folder and rewinding a session to one.

`shadow` (the shadow git repository: snapshots, changes), `restore` (files back to a
snapshot), `timeline` (pure: which snapshot each user turn rewinds to), `rewind` (checking and
carrying out a rewind). When snapshots are taken during a run: `tether.agent.turn.checkpoints`.
"""
