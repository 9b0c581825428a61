"""Jobs: a folder of Markdown tasks (`.tether/jobs/`) run unattended, durably, one fresh
headless agent per task run, on one machine or many (DBOS; see `tether.jobs.engine`).

Modules: `parse` (pure: task files, schedules, due slots), `folder` (the folder on disk:
markers, archive, run records), `runner` (one agent run, idempotent through its session),
`engine` (DBOS: workflows, queues, dispatch, workers). The command line is
`tether.cli.jobs_cmds` (`tether jobs ...`).
"""
