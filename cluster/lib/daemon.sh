# shellcheck shell=bash
# cluster/lib/daemon.sh: helpers for the daemons the cluster/ scripts start (sourced, not run).

# await_exec PID NAME waits (up to 5 s) until the background job PID has exec'd the binary
# NAME, or is gone. `setsid BIN &` forks a shell, which execs setsid, which execs BIN: until
# then /proc/PID/cmdline names bash or setsid, and a liveness check that compares argv[0]
# (needed so a stale PID file never makes us signal an unrelated process) would take a daemon
# that is only slow to start on a loaded machine for one that died.
await_exec() {
	local pid=$1 name=$2 i argv0
	for ((i = 0; i < 100; i++)); do
		# Gone: the caller's liveness check says so. An empty cmdline is not gone: it reads
		# empty for a moment while execve replaces the process image.
		[[ -d "/proc/${pid}" ]] || return 0
		argv0=
		IFS= read -r -d '' argv0 <"/proc/${pid}/cmdline" 2>/dev/null || true
		[[ "${argv0##*/}" == "${name}" ]] && return 0
		sleep 0.05
	done
}
