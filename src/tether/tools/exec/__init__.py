"""Tool execution: running one call and everything around it.

Owns: `run` (dispatch: in process, or a worker subprocess for folder tools), `outcome` (a call's
outcome as data and the conversion rules), `worker` + `forkserver` + `forkkeeper` (the worker
process and the fork server that starts workers cheaply), `hygiene` (the dedup and stale-read
rules) and the output gate (`persist` saves a long result whole, `normalize` renders it).
Does not own: tool definitions (`tether.tools.base`), the sandbox (`tether.sandbox`).
"""
