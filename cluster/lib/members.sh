#!/usr/bin/env bash
# cluster/lib/members.sh: stop the etcd members that local machines (internal/machines/local)
# run under a directory. Sourced by test.sh (members a killed test run left behind). Members run in their own session, so stopping the provider leaves them
# running; only processes whose pid file is under the directory and whose command line names
# that member's directory are signalled.

# stop_members DIR [SIGNAL] signals every member under DIR (default TERM, then KILL).
stop_members() {
	local dir=$1 sig=${2:-TERM} pidfile pid pids=()
	[[ -d ${dir} ]] || return 0
	while IFS= read -r pidfile; do
		pid=$(cat "${pidfile}" 2>/dev/null) || continue
		[[ ${pid} =~ ^[0-9]+$ ]] || continue
		if tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF -- "$(dirname "${pidfile}")"; then
			kill "-${sig}" "${pid}" 2>/dev/null && pids+=("${pid}")
		fi
	done < <(find "${dir}" -name etcd.pid 2>/dev/null)
	[[ ${#pids[@]} -gt 0 ]] || return 0
	for _ in $(seq 1 50); do
		kill -0 "${pids[@]}" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "${pids[@]}" 2>/dev/null || true
}
