"""The sandbox layer, below `tether.tools`: it imports neither `tether.tools` nor `tether.agent`.

Policy (data and pure rules):
- `tether.sandbox.policy`: `PathPolicy` (the file tools' deny list, write scope and the unix
  sockets commands may reach), the settings' confinement (`policy_for`, `limits_for`), safe
  mode's rule;
- `tether.sandbox.config`: `SandboxConfig` (what one command may touch), `confinement` /
  `command_config` (a command's config and the trust roots to sweep after it), `wrap_argv`,
  tether's own folders (`secret_dirs`, `tmp_parent`);
- `tether.sandbox.tree`: the cached walk finding every `.git` and every file the read deny list
  refuses, and `TrustRoots.sweep`;
- `tether.sandbox.paths`: containment by real path (`resolve_inside`, `open_inside`,
  `atomic_write`);
- `tether.sandbox.limits`: process-count and file-size limits (`ResourceLimits`).
Mechanism:
- `tether.sandbox.base`: `Sandbox` (`wrap`, `launch`), `Launch`, the private temp folders;
- `tether.sandbox.bwrap`, `tether.sandbox.landlock_sandbox`, `tether.sandbox.detect`
  (`detect_sandbox`);
- the stdlib-only launcher both kinds run the command through (`tether.sandbox.launcher`, with
  `landlock`, `reaper` — the one process reaper the fork keeper shares — and `unixguard`, the
  supervisor of unix-socket connects), and the guard's seccomp program built in the harness
  (`tether.sandbox.seccomp`);
- `tether.sandbox.proc`: process groups (`spawn_group`, `kill_group`, `spawn_confined`) and
  bounded output capture (`HeadTail`).

What is confined, under both kinds: writes only beneath `cfg.root` (or `cfg.write_paths`), a
private temp folder (one per `Sandbox` object, i.e. per process for the detected ones; removed
at exit, or by the next process after a kill -9) and `cfg.extra_writable`; every `.git` at any
depth, `root/.tether` and `cfg.protected` are read-only (one a command creates is moved aside
after it); the files the read deny list refuses are empty (`cfg.masked`); tether's own folders
and the other sessions' temp folders are hidden (`secret_dirs`); the rest of the file system
stays readable; unix sockets outside the sandbox cannot be connected to (`unixguard`, but
`cfg.unix_sockets`); no capabilities (even as root); network off unless `cfg.network`; `/run`
is empty.
- bubblewrap: `--ro-bind / /`, `--bind root root`, `--ro-bind root/.git …`, `--bind <private
  tmp> /tmp`, an empty `/run` (the host's service sockets: docker, D-Bus; the resolver's folder
  re-bound read-only when the network is on), fresh `/dev` and `/proc`, `--unshare-net` (a
  network namespace of its own, loopback only), `--cap-drop ALL`, `--die-with-parent`; the
  launcher inside runs the command under the unix-socket guard. Writes elsewhere fail with
  EROFS.
- Landlock: see `tether.sandbox.landlock`. Writes elsewhere fail with EACCES; the private temp
  folder is `$TMPDIR`, and also /tmp where the kernel grants a mount namespace (as does
  network-off: without a network namespace it covers TCP on ABI ≥ 4 only). `wrap` execs the
  stdlib-only launcher (a Python start-up, ~12 ms idle); `launch` confines the forked child instead (the
  parent builds the ruleset; the child makes a few syscalls before exec; no supervisor: no unix
  socket but `socketpair`).

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
