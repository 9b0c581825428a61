"""The sandbox layer, below `tether.tools`: it imports neither `tether.tools` nor `tether.agent`.

Policy (data and pure rules):
- `tether.sandbox.policy`: `SandboxConfig` (what one command may touch), `PathPolicy` (the file
  tools' deny list and write scope), the settings' confinement (`policy_for`, `limits_for`),
  safe mode's rule and `sandbox_config` / `wrap_argv` over a tool context;
- `tether.sandbox.paths`: containment by real path (`resolve_inside`, `open_inside`,
  `atomic_write`);
- `tether.sandbox.limits`: process-count and file-size limits (`ResourceLimits`).
Mechanism:
- `tether.sandbox.base`: `Sandbox` (`wrap`, `launch`), `Launch`, the private temp folders;
- `tether.sandbox.bwrap`, `tether.sandbox.landlock_sandbox` (the harness side of the
  stdlib-only launcher `tether.sandbox.landlock`, which also holds the one process reaper the
  launcher and the fork keeper share), `tether.sandbox.detect` (`detect_sandbox`);
- `tether.sandbox.proc`: process groups (`spawn_group`, `kill_group`, `spawn_confined`) and
  bounded output capture (`HeadTail`).

What is confined, under both kinds: writes only beneath `cfg.root` (or `cfg.write_paths`), a
private temp folder (one per `Sandbox` object, i.e. per process for the detected ones; removed
at exit, or by the next process after a kill -9) and `cfg.extra_writable`; `root/.git`,
`root/.tether` and `cfg.protected` are read-only; tether's own folders and the other sessions'
temp folders are hidden (`secret_dirs`); the rest of the file system stays readable; no
capabilities (even as root); network off unless `cfg.network`; `/run` is empty.
- bubblewrap: `--ro-bind / /`, `--bind root root`, `--ro-bind root/.git …`, `--bind <private
  tmp> /tmp`, an empty `/run` (the host's service sockets: docker, D-Bus; the resolver's folder
  re-bound read-only when the network is on), fresh `/dev` and `/proc`, `--unshare-net` (a
  network namespace of its own, loopback only), `--cap-drop ALL`, `--die-with-parent`. Writes
  elsewhere fail with EROFS.
- Landlock: see `tether.sandbox.landlock`. Writes elsewhere fail with EACCES; the private temp
  folder is `$TMPDIR`, and also /tmp where the kernel grants a mount namespace (as does
  network-off: without a network namespace it covers TCP on ABI ≥ 4 only). `wrap` execs the
  stdlib-only launcher (a Python start-up, ~12 ms idle); `launch` confines the forked child instead (the
  parent builds the ruleset; the child makes a few syscalls before exec).

Limit, under both kinds: a path-based Unix socket that stays visible can still be connected to
(Landlock does not govern `connect`; bwrap hides `/run` and `/tmp`, where services put theirs,
but a socket elsewhere, e.g. under `/var/tmp`, is reachable).

No `--new-session` and no PID namespace by default: the command stays in the caller's process
group, so killing that group on timeout/cancel kills the whole tree (bwrap included), and
background processes that let go of the output keep running as they do unsandboxed. A new
session would only guard against TIOCSTI on a controlling terminal, which tool subprocesses do
not have (they are started in their own session with stdin from /dev/null). `isolate_pids=True`
adds `--unshare-pid` (the command can then neither see nor signal other processes; its
background processes end with it, and with `--die-with-parent` a kill -9 of the harness ends
the whole tree). The `bash` tool sets it: a process-group kill from outside still reaches every
process in the namespace.
"""
