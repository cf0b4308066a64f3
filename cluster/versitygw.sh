#!/usr/bin/env bash
# cluster/versitygw.sh: a local versitygw, the test bed's second S3 server (bucket policy, ACLs).
#
# Usage:
#   cluster/versitygw.sh up             start versitygw on 127.0.0.1 (idempotent), write the env file
#   cluster/versitygw.sh down [--purge] stop it (TERM, then KILL); --purge also deletes all state
#   cluster/versitygw.sh status         print what runs where; exit 0 only when up and ready
#   cluster/versitygw.sh env            print the path of the env file (source it for VGW_*)
#
# One plain process: the posix backend on $STATE/data, the internal IAM (a JSON file in $STATE/iam)
# so that the admin API can create accounts besides root, versioning (kept in $STATE/versioning),
# and the admin API on a listener of its own. HTTP keep-alive is on (versitygw closes every
# connection after one request by default, which costs a TCP handshake and a TIME_WAIT socket per
# request under load). The S3 and admin ports are picked free on the first `up` and reused
# afterwards, as are the generated root keys, so the env file stays valid across down/up. The
# binary comes from cluster/tools.sh (built on first use).
#
# State lives in $RUN_DIR/versitygw (RUN_DIR defaults to <repo root>/.run): data/, iam/,
# versioning/, ports.env, credentials (root keys, 0600), env (0600), versitygw.log,
# versitygw.pid.
#
# The env file exports VGW_ENDPOINT, VGW_ADMIN_ENDPOINT, VGW_REGION, VGW_ACCESS_KEY and
# VGW_SECRET_KEY. Clients use path-style addressing and sign with service "s3" and region
# VGW_REGION, on the admin endpoint too.
#
# Environment: RUN_DIR, VGW_UP_TIMEOUT (seconds, default 60), VGW_EXTRA_ARGS (more global flags
# for versitygw, e.g. "--log-level=debug"; request logging is off by default, --quiet).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
STATE=${RUN_DIR}/versitygw
PORTS_FILE=${STATE}/ports.env
CREDENTIALS_FILE=${STATE}/credentials
ENV_FILE=${STATE}/env
LOG_FILE=${STATE}/versitygw.log
LOG_PREFIX=versitygw.sh
PID_DIR=${STATE}

VGW_UP_TIMEOUT=${VGW_UP_TIMEOUT:-60}
VGW_EXTRA_ARGS=${VGW_EXTRA_ARGS:-}
REGION="us-east-1"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------------------------------------
# binary

BIN=
resolve_binary() {
	# tools.sh only stats the file when the binary is cached, so this is cheap on every `up`.
	"${REPO_ROOT}/cluster/tools.sh" versitygw
	BIN=$("${REPO_ROOT}/cluster/tools.sh" path versitygw)
}

# ---------------------------------------------------------------------------------------------
# ports and keys

# load_ports reads the recorded ports, choosing (and recording) new ones on first use or when a
# recorded port was taken by someone else while we were down.
load_ports() {
	S3_PORT='' ADMIN_PORT=''
	# shellcheck source=/dev/null
	[[ -f "${PORTS_FILE}" ]] && source "${PORTS_FILE}"
	local var
	for var in S3_PORT ADMIN_PORT; do
		local p=${!var}
		# A recorded port in use by our own running versitygw is fine.
		if [[ -n "${p}" ]] && { port_free "${p}" || daemon_running versitygw; }; then
			PICKED="${PICKED:-} ${p}"
			continue
		fi
		[[ -n "${p}" ]] && log "port ${p} (${var}) was taken while we were down, picking another"
		pick_port "${var}"
	done
	cat >"${PORTS_FILE}" <<-EOF
		S3_PORT=${S3_PORT}
		ADMIN_PORT=${ADMIN_PORT}
	EOF
}

# ensure_credentials generates the root access and secret keys once; later runs reuse them.
ensure_credentials() {
	if [[ ! -s "${CREDENTIALS_FILE}" ]]; then
		local tmp="${CREDENTIALS_FILE}.tmp"
		# Hex only: the access key appears bare in grant headers (id=<access key>) and in
		# policies, where anything beyond [0-9A-Za-z] would need quoting or escaping.
		(
			umask 077
			cat >"${tmp}" <<-EOF
				ROOT_ACCESS_KEY=$(openssl rand -hex 10 | tr 'a-f' 'A-F')
				ROOT_SECRET_KEY=$(openssl rand -hex 20)
			EOF
		)
		mv -f "${tmp}" "${CREDENTIALS_FILE}"
	fi
	chmod 600 "${CREDENTIALS_FILE}"
	ROOT_ACCESS_KEY='' ROOT_SECRET_KEY=''
	# shellcheck source=/dev/null
	source "${CREDENTIALS_FILE}"
	[[ -n "${ROOT_ACCESS_KEY}" && -n "${ROOT_SECRET_KEY}" ]] || die "${CREDENTIALS_FILE} is incomplete (down --purge to start over)"
}

write_env() {
	local tmp="${ENV_FILE}.tmp"
	(
		umask 077
		cat >"${tmp}" <<-EOF
			export VGW_ENDPOINT=http://127.0.0.1:${S3_PORT}
			export VGW_ADMIN_ENDPOINT=http://127.0.0.1:${ADMIN_PORT}
			export VGW_REGION=${REGION}
			export VGW_ACCESS_KEY=${ROOT_ACCESS_KEY}
			export VGW_SECRET_KEY=${ROOT_SECRET_KEY}
		EOF
	)
	mv -f "${tmp}" "${ENV_FILE}"
}

# ---------------------------------------------------------------------------------------------
# process

# start launches versitygw (lib/daemon.sh) with its output in $LOG_FILE. The root keys go in
# through the environment, not argv, so they do not show in ps.
start() {
	daemon_running versitygw && return 0
	local extra=()
	[[ -n "${VGW_EXTRA_ARGS}" ]] && read -r -a extra <<<"${VGW_EXTRA_ARGS}"
	mkdir -p "${STATE}/data" "${STATE}/iam" "${STATE}/versioning"
	printf '=== %s start\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"${LOG_FILE}"
	ROOT_ACCESS_KEY_ID="${ROOT_ACCESS_KEY}" ROOT_SECRET_ACCESS_KEY="${ROOT_SECRET_KEY}" \
		daemon_start versitygw "${LOG_FILE}" "${BIN}" \
		--port "127.0.0.1:${S3_PORT}" \
		--admin-port "127.0.0.1:${ADMIN_PORT}" \
		--region "${REGION}" \
		--iam-dir "${STATE}/iam" \
		--keep-alive \
		--quiet \
		"${extra[@]}" \
		posix \
		--versioning-dir "${STATE}/versioning" \
		"${STATE}/data"
}

# signed_request URL CURL_ARGS... sends a SigV4-signed request (service s3) without a body as
# root and prints the HTTP status. The keys reach curl through a config on stdin, not argv.
# versitygw refuses requests without x-amz-content-sha256 (400 InvalidRequest), which curl's
# --aws-sigv4 does not add by itself; given as a header, curl signs it.
signed_request() {
	local url=$1
	shift
	printf 'user = "%s:%s"\n' "${ROOT_ACCESS_KEY}" "${ROOT_SECRET_KEY}" |
		curl -sS -K - --max-time 2 -o /dev/null -w '%{http_code}' \
			--aws-sigv4 "aws:amz:${REGION}:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
			"$@" "${url}"
}

# ready succeeds when both listeners answer an authenticated request: ListBuckets on the S3 port
# (proves the keys and the backend) and list-users on the admin port (proves the IAM backend).
ready() {
	[[ "$(signed_request "http://127.0.0.1:${S3_PORT}/")" == 200 ]] &&
		[[ "$(signed_request "http://127.0.0.1:${ADMIN_PORT}/list-users" -X PATCH)" == 200 ]]
}

# wait_ready polls every 0.1 s until versitygw is ready or the deadline passes; it fails fast
# when the process died, showing the end of its log.
wait_ready() {
	while ! ready >/dev/null 2>&1; do
		if ! daemon_running versitygw; then
			tail -n 30 "${LOG_FILE}" >&2 || true
			die "versitygw exited during start-up (log: ${LOG_FILE})"
		fi
		if ((SECONDS >= DEADLINE)); then
			tail -n 30 "${LOG_FILE}" >&2 || true
			daemon_stop versitygw
			die "versitygw not ready after ${VGW_UP_TIMEOUT}s (log: ${LOG_FILE})"
		fi
		sleep 0.1
	done
}

# ---------------------------------------------------------------------------------------------
# commands

# lock serialises up and down on fd 8 (held until this script exits).
lock() {
	exec 8>"${STATE}/.lock"
	flock -w "${VGW_UP_TIMEOUT}" 8 || die "another versitygw.sh has held ${STATE}/.lock for ${VGW_UP_TIMEOUT}s"
}

cmd_up() {
	local t0=${EPOCHREALTIME}
	DEADLINE=$((SECONDS + VGW_UP_TIMEOUT))
	mkdir -p "${STATE}"
	chmod 700 "${STATE}"
	# One `up` at a time: a second caller waits, then finds it running.
	lock

	resolve_binary
	ensure_credentials
	if daemon_running versitygw && [[ -f "${PORTS_FILE}" ]]; then
		# shellcheck source=/dev/null
		source "${PORTS_FILE}"
		if ready; then
			write_env
			log "already running: http://127.0.0.1:${S3_PORT} (env: ${ENV_FILE})"
			return 0
		fi
		# Alive but not answering (hung, or the keys changed under it): start over.
		daemon_stop versitygw
	fi
	daemon_forget_dead versitygw

	load_ports
	start
	wait_ready
	write_env
	log "ready in $(elapsed "${t0}")s: http://127.0.0.1:${S3_PORT}, admin http://127.0.0.1:${ADMIN_PORT} (env: ${ENV_FILE})"
}

# elapsed T0 prints the seconds since EPOCHREALTIME T0 with two decimals.
elapsed() {
	local now=${EPOCHREALTIME} a=${1/./} b
	b=${now/./}
	local us=$((10#${b} - 10#${a}))
	printf '%d.%02d' "$((us / 1000000))" "$((us % 1000000 / 10000))"
}

cmd_down() {
	local purge=false
	case "${1:-}" in
	"") ;;
	--purge) purge=true ;;
	*) usage ;;
	esac
	[[ $# -le 1 ]] || usage
	if [[ -d "${STATE}" ]]; then
		lock
		daemon_stop versitygw
	fi
	if ${purge}; then
		rm -rf "${STATE}"
		log "purged ${STATE}"
	fi
}

cmd_status() {
	local rc=0
	local pid
	if pid=$(daemon_pid versitygw); then
		printf '%-12s running (pid %s)\n' "versitygw" "${pid}"
	else
		printf '%-12s stopped\n' "versitygw"
		rc=3
	fi
	if [[ -f "${PORTS_FILE}" ]]; then
		# shellcheck source=/dev/null
		source "${PORTS_FILE}"
		printf '%-12s http://127.0.0.1:%s\n' "s3" "${S3_PORT}" "admin" "${ADMIN_PORT}"
		ROOT_ACCESS_KEY='' ROOT_SECRET_KEY=''
		# shellcheck source=/dev/null
		[[ -f "${CREDENTIALS_FILE}" ]] && source "${CREDENTIALS_FILE}"
		if daemon_running versitygw && [[ -n "${ROOT_ACCESS_KEY}" ]] && ready; then
			printf '%-12s ok\n' "ready"
		else
			printf '%-12s no\n' "ready"
			rc=3
		fi
	fi
	printf '%-12s %s\n' "env" "${ENV_FILE}" "log" "${LOG_FILE}"
	return "${rc}"
}

main() {
	[[ $# -gt 0 ]] || usage
	local cmd=$1
	shift
	case "${cmd}" in
	up | status | env) [[ $# -eq 0 ]] || usage ;;
	esac
	case "${cmd}" in
	up) cmd_up ;;
	down) cmd_down "$@" ;;
	status) cmd_status ;;
	env) echo "${ENV_FILE}" ;;
	-h | --help | help) usage ;;
	*) usage ;;
	esac
}

main "$@"
