#!/usr/bin/env bash
# cluster/kube.sh: a long-running local Kubernetes control plane for `make dev` and the e2e tests.
#
# Usage:
#   cluster/kube.sh up             start etcd, kube-apiserver and kube-controller-manager (idempotent)
#   cluster/kube.sh down [--purge] stop them (TERM, then KILL); --purge also deletes all state
#   cluster/kube.sh status         print what runs where; exit 0 only when up and ready
#   cluster/kube.sh kubeconfig     print the path of the admin kubeconfig
#
# Plain processes on 127.0.0.1, no kubelet and no container runtime: nothing here runs pods. The
# controller-manager is there for garbage collection (composed resources of a deleted claim) and
# namespace deletion. Binaries come from cluster/tools.sh (built on first use). Ports are picked
# free on the first `up` and reused afterwards, so a kubeconfig stays valid across down/up.
#
# State lives in $RUN_DIR/kube (RUN_DIR defaults to <repo root>/.run): pki/, etcd/ (data),
# logs/, *.pid, ports.env, kubeconfig (admin, system:masters), controller-manager.kubeconfig.
#
# Environment: RUN_DIR, KUBE_UP_TIMEOUT (seconds, default 180), KUBE_CONTROLLERS (the
# controller-manager's --controllers list).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
STATE=${RUN_DIR}/kube
PKI=${STATE}/pki
LOGS=${STATE}/logs
KUBECONFIG_ADMIN=${STATE}/kubeconfig
KUBECONFIG_KCM=${STATE}/controller-manager.kubeconfig
PORTS_FILE=${STATE}/ports.env

KUBE_UP_TIMEOUT=${KUBE_UP_TIMEOUT:-180}
SERVICE_CIDR=10.0.0.0/24
# The first address of SERVICE_CIDR: the `kubernetes` Service's ClusterIP, put in the serving
# certificate for clients that reach the API through it.
SERVICE_IP=10.0.0.1
# Only what a cluster without nodes or pods needs: garbage collection and namespace deletion, plus
# the default ServiceAccount and kube-root-ca.crt ConfigMap every namespace normally has, and
# aggregated ClusterRoles (admin/edit/view pick up rules from labelled roles, as Crossplane's
# do). The rest of the default set (pods, nodes, volumes) would only burn CPU shared with tests.
KUBE_CONTROLLERS=${KUBE_CONTROLLERS:-garbage-collector-controller,namespace-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller}

COMPONENTS=(etcd kube-apiserver kube-controller-manager)

log() { printf 'kube.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------------------------------------
# binaries

BIN_DIR=
resolve_binaries() {
	# tools.sh only stats files when the binaries are cached, so this is cheap on every `up`.
	"${REPO_ROOT}/cluster/tools.sh" kube
	BIN_DIR=$("${REPO_ROOT}/cluster/tools.sh" path kube)
}

kubectl_admin() {
	"${BIN_DIR:-$("${REPO_ROOT}/cluster/tools.sh" path kube)}/kubectl" \
		--kubeconfig "${KUBECONFIG_ADMIN}" --request-timeout=5s "$@"
}

# ---------------------------------------------------------------------------------------------
# ports


# load_ports reads the recorded ports, choosing (and recording) new ones on first use or when a
# recorded port was taken by someone else while we were down.
load_ports() {
	ETCD_CLIENT_PORT='' ETCD_PEER_PORT='' APISERVER_PORT=''
	# shellcheck source=/dev/null
	[[ -f "${PORTS_FILE}" ]] && source "${PORTS_FILE}"
	local var
	for var in ETCD_CLIENT_PORT ETCD_PEER_PORT APISERVER_PORT; do
		local p=${!var}
		local owner=${var%_PORT}
		case "${owner}" in ETCD_*) owner=etcd ;; APISERVER) owner=kube-apiserver ;; esac
		# A recorded port in use by our own running component is fine.
		if [[ -n "${p}" ]] && { port_free "${p}" || running "${owner}"; }; then
			PICKED="${PICKED:-} ${p}"
			continue
		fi
		pick_port "${var}"
	done
	cat >"${PORTS_FILE}" <<-EOF
		ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT}
		ETCD_PEER_PORT=${ETCD_PEER_PORT}
		APISERVER_PORT=${APISERVER_PORT}
	EOF
}

# ---------------------------------------------------------------------------------------------
# certificates

# sign NAME SUBJECT EXTENSIONS issues $PKI/NAME.{key,crt} from the CA.
sign() {
	local name=$1 subj=$2 ext=$3
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/${name}.key" 2>/dev/null
	openssl req -new -key "${PKI}/${name}.key" -subj "${subj}" -out "${PKI}/${name}.csr"
	openssl x509 -req -in "${PKI}/${name}.csr" -CA "${PKI}/ca.crt" -CAkey "${PKI}/ca.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
		-extfile <(printf '%s\n' "${ext}") -out "${PKI}/${name}.crt" 2>/dev/null
	rm -f "${PKI}/${name}.csr"
}

# ensure_pki creates the CA, the serving and client certificates and the service-account key
# pair once; later runs reuse them so existing kubeconfigs and tokens stay valid.
ensure_pki() {
	[[ -f "${PKI}/done" ]] && return 0
	rm -rf "${PKI}"
	mkdir -p "${PKI}"
	chmod 700 "${PKI}"
	# ECDSA P-256: generated in milliseconds, and accepted by every Go client and by the
	# apiserver for service-account tokens (ES256).
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/ca.key" 2>/dev/null
	# A config of our own: the system openssl.cnf's v3_ca section would add its own extensions.
	openssl req -x509 -new -key "${PKI}/ca.key" -subj "/CN=provider-stackservices-dev-ca" \
		-days 3650 -sha256 -out "${PKI}/ca.crt" -config <(printf '%s\n' \
			'[req]' 'distinguished_name = dn' 'x509_extensions = ca' '[dn]' '[ca]' \
			'basicConstraints = critical,CA:TRUE' \
			'keyUsage = critical,keyCertSign,cRLSign,digitalSignature' \
			'subjectKeyIdentifier = hash')
	local leaf="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
	sign apiserver "/CN=kube-apiserver" "${leaf}
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:${SERVICE_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	sign admin "/O=system:masters/CN=admin" "${leaf}
extendedKeyUsage=clientAuth"
	# system:masters as well: with --use-service-account-credentials=false every controller acts
	# as the controller-manager itself, and the garbage collector must delete any resource type
	# (including the provider's CRDs), which the bootstrap system:kube-controller-manager role
	# does not allow.
	sign controller-manager "/O=system:masters/CN=system:kube-controller-manager" "${leaf}
extendedKeyUsage=clientAuth"
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/sa.key" 2>/dev/null
	openssl ec -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub" 2>/dev/null
	touch "${PKI}/done"
}

# write_kubeconfig FILE CLIENT writes a self-contained kubeconfig (certificates embedded) for the
# client certificate $PKI/CLIENT.{crt,key}, so it can be copied or mounted anywhere.
write_kubeconfig() {
	local file=$1 client=$2
	local tmp="${file}.tmp"
	cat >"${tmp}" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: stackservices-dev
		  cluster:
		    server: https://127.0.0.1:${APISERVER_PORT}
		    certificate-authority-data: $(base64 -w0 "${PKI}/ca.crt")
		users:
		- name: ${client}
		  user:
		    client-certificate-data: $(base64 -w0 "${PKI}/${client}.crt")
		    client-key-data: $(base64 -w0 "${PKI}/${client}.key")
		contexts:
		- name: stackservices-dev
		  context:
		    cluster: stackservices-dev
		    user: ${client}
		current-context: stackservices-dev
	EOF
	chmod 600 "${tmp}"
	mv -f "${tmp}" "${file}"
}

# ---------------------------------------------------------------------------------------------
# processes

pid_file() { echo "${STATE}/$1.pid"; }

# running NAME succeeds when NAME's recorded PID is alive and still runs NAME's binary (a stale
# PID file after a reboot may name an unrelated process, which we must never signal).
running() {
	local f pid
	f=$(pid_file "$1")
	[[ -f "${f}" ]] || return 1
	pid=$(<"${f}")
	[[ "${pid}" =~ ^[0-9]+$ ]] || return 1
	[[ -r "/proc/${pid}/cmdline" ]] || return 1
	local argv0=
	# argv[0] is the cmdline up to its first NUL.
	IFS= read -r -d '' argv0 <"/proc/${pid}/cmdline" 2>/dev/null || true
	[[ "${argv0##*/}" == "$1" ]]
}

# start NAME ARGS... launches a component in its own session (so ^C in the calling make does not
# take it down) with stdin closed and output in $LOGS/NAME.log, and records its PID. fd 8, our
# lock, is closed for it: a daemon inheriting it would hold the lock for as long as it runs.
start() {
	local name=$1
	shift
	running "${name}" && return 0
	log "starting ${name}"
	setsid "${BIN_DIR}/${name}" "$@" </dev/null >>"${LOGS}/${name}.log" 2>&1 8>&- &
	echo $! >"$(pid_file "${name}")"
	await_exec $! "${name}"
}

# stop NAME sends TERM, waits up to 20 s for a clean exit (etcd flushes, apiserver drains), then
# KILLs.
stop() {
	local name=$1 f pid i
	f=$(pid_file "${name}")
	if running "${name}"; then
		pid=$(<"${f}")
		log "stopping ${name} (pid ${pid})"
		kill -TERM "${pid}" 2>/dev/null || true
		for ((i = 0; i < 200; i++)); do
			running "${name}" || break
			sleep 0.1
		done
		if running "${name}"; then
			log "${name} ignored TERM for 20s, killing"
			kill -KILL "${pid}" 2>/dev/null || true
			sleep 0.2
		fi
	fi
	rm -f "${f}"
}

# wait_for WHAT CMD... polls CMD every 0.2 s until it succeeds or the deadline passes; it also
# fails fast when a component died, showing the end of its log.
wait_for() {
	local what=$1 c
	shift
	while ! "$@" >/dev/null 2>&1; do
		for c in "${COMPONENTS[@]}"; do
			if [[ -f "$(pid_file "${c}")" ]] && ! running "${c}"; then
				tail -n 30 "${LOGS}/${c}.log" >&2 || true
				die "${c} exited while waiting for ${what} (log: ${LOGS}/${c}.log)"
			fi
		done
		if ((SECONDS >= DEADLINE)); then
			die "timed out after ${KUBE_UP_TIMEOUT}s waiting for ${what} (logs: ${LOGS})"
		fi
		sleep 0.2
	done
}

etcd_healthy() {
	local health
	health=$(curl -fsS --max-time 2 "http://127.0.0.1:${ETCD_CLIENT_PORT}/health") || return 1
	[[ "${health}" == *'"health":"true"'* ]]
}

apiserver_ready() {
	[[ "$(kubectl_admin get --raw /readyz 2>/dev/null)" == "ok" ]]
}

# The serviceaccount controller creates this once the controller-manager runs its controllers.
controllers_working() {
	kubectl_admin -n default get serviceaccount default
}

# ---------------------------------------------------------------------------------------------
# commands

# lock serialises up and down on fd 8 (held until this script exits).
lock() {
	exec 8>"${STATE}/.lock"
	flock -w "${KUBE_UP_TIMEOUT}" 8 || die "another kube.sh has held ${STATE}/.lock for ${KUBE_UP_TIMEOUT}s"
}

cmd_up() {
	local t0=${SECONDS}
	DEADLINE=$((SECONDS + KUBE_UP_TIMEOUT))
	mkdir -p "${STATE}" "${LOGS}"
	# One `up` at a time: a second caller waits, then finds everything running.
	lock

	resolve_binaries
	if running etcd && running kube-apiserver && running kube-controller-manager && [[ -f "${PORTS_FILE}" ]]; then
		# shellcheck source=/dev/null
		source "${PORTS_FILE}"
		if apiserver_ready; then
			log "already running: https://127.0.0.1:${APISERVER_PORT} (KUBECONFIG=${KUBECONFIG_ADMIN})"
			return 0
		fi
	fi

	# PID files of components that died (crash, reboot, kill) would make wait_for report them
	# as exited before they are even started again.
	local c
	for c in "${COMPONENTS[@]}"; do
		running "${c}" || rm -f "$(pid_file "${c}")"
	done

	ensure_pki
	load_ports
	write_kubeconfig "${KUBECONFIG_ADMIN}" admin
	write_kubeconfig "${KUBECONFIG_KCM}" controller-manager

	local etcd_url="http://127.0.0.1:${ETCD_CLIENT_PORT}" peer_url="http://127.0.0.1:${ETCD_PEER_PORT}"
	start etcd \
		--name=dev \
		--data-dir="${STATE}/etcd" \
		--listen-client-urls="${etcd_url}" \
		--advertise-client-urls="${etcd_url}" \
		--listen-peer-urls="${peer_url}" \
		--initial-advertise-peer-urls="${peer_url}" \
		--initial-cluster="dev=${peer_url}" \
		--log-level=warn
	wait_for "etcd" etcd_healthy

	start kube-apiserver \
		--etcd-servers="${etcd_url}" \
		--bind-address=127.0.0.1 \
		--advertise-address=127.0.0.1 \
		--secure-port="${APISERVER_PORT}" \
		--cert-dir="${STATE}/apiserver" \
		--tls-cert-file="${PKI}/apiserver.crt" \
		--tls-private-key-file="${PKI}/apiserver.key" \
		--client-ca-file="${PKI}/ca.crt" \
		--authorization-mode=RBAC \
		--service-account-issuer="https://127.0.0.1:${APISERVER_PORT}" \
		--service-account-key-file="${PKI}/sa.pub" \
		--service-account-signing-key-file="${PKI}/sa.key" \
		--service-cluster-ip-range="${SERVICE_CIDR}" \
		--disable-admission-plugins=ServiceAccount \
		--endpoint-reconciler-type=none \
		--profiling=false
	# (--endpoint-reconciler-type=none: Endpoints may not hold a loopback address, so the default
	# reconciler would log a validation error for the `kubernetes` Service forever.)
	wait_for "kube-apiserver /readyz" apiserver_ready

	start kube-controller-manager \
		--kubeconfig="${KUBECONFIG_KCM}" \
		--controllers="${KUBE_CONTROLLERS}" \
		--use-service-account-credentials=false \
		--root-ca-file="${PKI}/ca.crt" \
		--service-cluster-ip-range="${SERVICE_CIDR}" \
		--secure-port=0 \
		--leader-elect=false
	wait_for "kube-controller-manager (default ServiceAccount)" controllers_working

	log "ready in $((SECONDS - t0))s: https://127.0.0.1:${APISERVER_PORT} (KUBECONFIG=${KUBECONFIG_ADMIN})"
}

cmd_down() {
	local purge=false
	case "${1:-}" in
	"") ;;
	--purge) purge=true ;;
	*) usage ;;
	esac
	if [[ -d "${STATE}" ]]; then
		lock
		local i
		# Reverse start order: controllers first, etcd last so the apiserver can finish writes.
		for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
			stop "${COMPONENTS[i]}"
		done
	fi
	if ${purge}; then
		rm -rf "${STATE}"
		log "purged ${STATE}"
	fi
}

cmd_status() {
	local c rc=0
	for c in "${COMPONENTS[@]}"; do
		if running "${c}"; then
			printf '%-24s running (pid %s)\n' "${c}" "$(<"$(pid_file "${c}")")"
		else
			printf '%-24s stopped\n' "${c}"
			rc=3
		fi
	done
	if [[ -f "${PORTS_FILE}" ]]; then
		# shellcheck source=/dev/null
		source "${PORTS_FILE}"
		printf '%-24s https://127.0.0.1:%s\n' "apiserver" "${APISERVER_PORT}"
		printf '%-24s http://127.0.0.1:%s\n' "etcd" "${ETCD_CLIENT_PORT}"
		if running kube-apiserver && apiserver_ready; then
			printf '%-24s ok\n' "readyz"
		else
			printf '%-24s not ready\n' "readyz"
			rc=3
		fi
	fi
	printf '%-24s %s\n' "kubeconfig" "${KUBECONFIG_ADMIN}"
	return "${rc}"
}

main() {
	[[ $# -gt 0 ]] || usage
	local cmd=$1
	shift
	case "${cmd}" in
	up | status | kubeconfig) [[ $# -eq 0 ]] || usage ;;
	esac
	case "${cmd}" in
	up) cmd_up ;;
	down) cmd_down "$@" ;;
	status) cmd_status ;;
	kubeconfig) echo "${KUBECONFIG_ADMIN}" ;;
	-h | --help | help) usage ;;
	*) usage ;;
	esac
}

main "$@"
