# shellcheck shell=bash
# cluster/lib/daemon.sh: the one way the cluster/ scripts log, fail, and start, watch and stop
# the daemons they run (sourced, not run).
#
# The sourcing script sets LOG_PREFIX (its name in messages) and PID_DIR (where PID files go)
# before it calls anything here.
#
# A PID file, $PID_DIR/NAME.pid, holds one line: "PID MATCH". MATCH is a word of the daemon's
# command line once it has exec'd (by default the absolute path of its binary): a PID file left
# from before a reboot may name an unrelated process by now, which must never be taken for ours,
# let alone signalled. Each daemon is started in a session of its own (setsid), so that ^C in
# the calling make does not take it down, and so that stopping it signals its process group:
# the daemon and the workers it forked, nothing else.

log() { printf '%s: %s\n' "${LOG_PREFIX:-${0##*/}}" "$*" >&2; }

# die MESSAGE [LOGFILE...] prints MESSAGE and the end of each non-empty LOGFILE, and exits 1.
die() {
	local msg=$1 f
	shift
	log "error: ${msg}"
	for f in "$@"; do
		[[ -s "${f}" ]] || continue
		printf -- '----- last lines of %s -----\n' "${f}" >&2
		tail -n 40 "${f}" >&2
	done
	exit 1
}

daemon_pid_file() { echo "${PID_DIR}/$1.pid"; }

# cmdline_of PID prints the process's command line with its NULs as spaces (empty when gone).
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true; }

# daemon_pid NAME prints the PID of daemon NAME and succeeds when it runs: its PID file names a
# live process whose command line still holds the recorded MATCH. While a process execs (setsid
# execs the daemon, a script execs its interpreter) its command line reads empty for a moment:
# an empty one of a process that is not a zombie counts as running.
daemon_pid() {
	local f pid match cmdline stat
	f=$(daemon_pid_file "$1")
	[[ -f "${f}" ]] || return 1
	read -r pid match <"${f}" || true
	[[ "${pid}" =~ ^[0-9]+$ && -n "${match}" ]] || return 1
	cmdline=$(cmdline_of "${pid}")
	if [[ -z "${cmdline}" ]]; then
		# Kernel threads have an empty command line too, and no executable.
		readlink "/proc/${pid}/exe" >/dev/null 2>&1 || return 1
		stat=$(cat "/proc/${pid}/stat" 2>/dev/null) || return 1
		# The state follows the parenthesised command name.
		stat=${stat##*) }
		[[ -n "${stat}" && "${stat:0:1}" != Z ]] || return 1
	else
		[[ " ${cmdline}" == *"${match}"* ]] || return 1
	fi
	echo "${pid}"
}

daemon_running() { daemon_pid "$1" >/dev/null; }

# daemon_start NAME LOGFILE COMMAND... runs COMMAND detached, in a session of its own, stdin
# closed, output appended to LOGFILE, and records it. COMMAND must stay in the foreground.
# DAEMON_MATCH (in the environment of the call) overrides the word recorded: needed when
# COMMAND is a wrapper (nsenter, a Python entry point) whose argv changes on exec. The file
# descriptors 7 to 9, which the scripts use for their locks, are closed for the daemon: one
# that inherited a lock would hold it for as long as it runs. Returns once the daemon has
# exec'd (or is gone: the caller's wait notices that); starting one that runs is a no-op.
daemon_start() {
	local name=$1 logfile=$2 match=${DAEMON_MATCH:-$3}
	shift 2
	daemon_running "${name}" && return 0
	log "starting ${name}"
	mkdir -p "${PID_DIR}" "$(dirname "${logfile}")"
	setsid "$@" </dev/null >>"${logfile}" 2>&1 7>&- 8>&- 9>&- &
	local pid=$! i
	echo "${pid} ${match}" >"$(daemon_pid_file "${name}")"
	# `setsid CMD &` forks a shell, which execs setsid, which execs CMD: until then the
	# command line is the caller's, and the daemon would look dead.
	for ((i = 0; i < 100; i++)); do
		[[ -d "/proc/${pid}" ]] || return 0
		daemon_running "${name}" && return 0
		sleep 0.05
	done
}

# group_alive PGID succeeds while a process of the group runs (zombies, which wait for init to
# reap them, do not count).
group_alive() {
	ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# daemon_stop NAME [TIMEOUT] TERMs the daemon's process group, waits up to TIMEOUT seconds
# (default 20: etcd flushes, the apiserver and the provider drain), then KILLs what is left.
daemon_stop() {
	local name=$1 timeout=${2:-20} pid deadline
	if pid=$(daemon_pid "${name}"); then
		log "stopping ${name} (pid ${pid})"
		kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
		deadline=$((SECONDS + timeout))
		while group_alive "${pid}" && ((SECONDS < deadline)); do sleep 0.1; done
		if group_alive "${pid}"; then
			log "${name} ignored TERM for ${timeout}s, killing it"
			kill -KILL -- "-${pid}" 2>/dev/null || true
			deadline=$((SECONDS + 10))
			while group_alive "${pid}" && ((SECONDS < deadline)); do sleep 0.1; done
		fi
	fi
	rm -f "$(daemon_pid_file "${name}")"
}

# daemon_status NAME... prints whether each daemon runs (and its PID); it fails (3) when one
# does not.
daemon_status() {
	local name pid rc=0
	for name in "$@"; do
		if pid=$(daemon_pid "${name}"); then
			printf '%-24s running (pid %s)\n' "${name}" "${pid}"
		else
			printf '%-24s stopped\n' "${name}"
			rc=3
		fi
	done
	return "${rc}"
}

# daemon_forget_dead NAME... removes the PID files of daemons that exited since they were
# started (a crash, a reboot), so that they are started again rather than reported dead.
daemon_forget_dead() {
	local name
	for name in "$@"; do
		if [[ -f "$(daemon_pid_file "${name}")" ]] && ! daemon_running "${name}"; then
			log "${name} had exited"
			rm -f "$(daemon_pid_file "${name}")"
		fi
	done
}

# DAEMONS lists the sourcing script's daemons, and daemon_log NAME (which it may redefine)
# their log files: wait_for fails fast, with the end of its log, when one of them died.
DAEMONS=()
daemon_log() { echo "${LOGS:-${PID_DIR}}/$1.log"; }

# check_alive fails when a daemon of DAEMONS that was started has exited.
check_alive() {
	local name
	for name in "${DAEMONS[@]}"; do
		if [[ -f "$(daemon_pid_file "${name}")" ]] && ! daemon_running "${name}"; then
			die "${name} exited (log: $(daemon_log "${name}"))" "$(daemon_log "${name}")"
		fi
	done
}

# wait_for WHAT CMD... polls CMD every WAIT_INTERVAL seconds (default 0.2) until it succeeds,
# for at most WAIT_TIMEOUT seconds (default 300), failing fast when a daemon died. ON_TIMEOUT,
# when set, is run before giving up.
ON_TIMEOUT=
wait_for() {
	local what=$1 deadline=$((SECONDS + ${WAIT_TIMEOUT:-300}))
	shift
	while ! "$@" >/dev/null 2>&1; do
		check_alive
		if ((SECONDS >= deadline)); then
			if [[ -n "${ON_TIMEOUT}" ]]; then ${ON_TIMEOUT} >&2 || true; fi
			die "timed out after ${WAIT_TIMEOUT:-300}s waiting for ${what}"
		fi
		sleep "${WAIT_INTERVAL:-0.2}"
	done
}
