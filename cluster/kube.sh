#!/usr/bin/env bash
# cluster/kube.sh: a long-running local Kubernetes control plane for `make dev` and the e2e tests.
#
# Usage:
#   cluster/kube.sh up             start etcd, kube-apiserver and kube-controller-manager, and with
#                                  KUBE_NODE=1 kube-scheduler (idempotent)
#   cluster/kube.sh down [--purge] stop them (TERM, then KILL); --purge also deletes all state
#   cluster/kube.sh status         print what runs where; exit 0 only when up and ready
#   cluster/kube.sh kubeconfig     print the path of the admin kubeconfig
#
# Plain processes. Alone (bench-scale) it runs no pods, on 127.0.0.1: the controller-manager is
# there for garbage collection (composed resources of a deleted claim) and namespace deletion.
# cluster/node.sh runs it with KUBE_NODE=1 for a cluster with a node: the apiserver then binds
# the node's bridge address (KUBE_ADDRESS; pods reach the `kubernetes` Service only through a
# non-loopback endpoint), admits ServiceAccount tokens, authorizes kubelets (Node, RBAC), and
# the scheduler and every controller a Deployment needs run. Binaries come from
# cluster/tools.sh (built on first use). Ports are picked free on the first `up` and reused
# afterwards, so a kubeconfig stays valid across down/up.
#
# State lives in $RUN_DIR/kube (RUN_DIR defaults to <repo root>/.run): pki/, etcd/ (data),
# logs/, *.pid, ports.env, kubeconfig (admin, system:masters), controller-manager.kubeconfig.
#
# Environment: RUN_DIR, KUBE_UP_TIMEOUT (seconds, default 180), KUBE_CONTROLLERS (the
# controller-manager's --controllers list), KUBE_NODE=1, KUBE_ADDRESS (default 127.0.0.1),
# KUBE_SERVICE_CIDR (a /24; default 10.0.0.0/24).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
# shellcheck source=cluster/lib/pki.sh
source "${REPO_ROOT}/cluster/lib/pki.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
STATE=${RUN_DIR}/kube
LOG_PREFIX=kube.sh
PID_DIR=${STATE}
PKI=${STATE}/pki
LOGS=${STATE}/logs
KUBECONFIG_ADMIN=${STATE}/kubeconfig
KUBECONFIG_KCM=${STATE}/controller-manager.kubeconfig
PORTS_FILE=${STATE}/ports.env

KUBE_UP_TIMEOUT=${KUBE_UP_TIMEOUT:-180}
WAIT_TIMEOUT=${KUBE_UP_TIMEOUT}
KUBE_NODE=${KUBE_NODE:-}
KUBE_ADDRESS=${KUBE_ADDRESS:-127.0.0.1}
SERVICE_CIDR=${KUBE_SERVICE_CIDR:-10.0.0.0/24}
# The first address of SERVICE_CIDR: the `kubernetes` Service's ClusterIP, put in the serving
# certificate for clients that reach the API through it.
SERVICE_IP=${SERVICE_CIDR%.0/24}.1
# Only what a cluster without nodes or pods needs: garbage collection and namespace deletion, plus
# the default ServiceAccount and kube-root-ca.crt ConfigMap every namespace normally has, and
# aggregated ClusterRoles (admin/edit/view pick up rules from labelled roles, as Crossplane's
# do). The rest of the default set (pods, nodes, volumes) would only burn CPU shared with tests.
DEFAULT_CONTROLLERS=garbage-collector-controller,namespace-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller
# With a node: what Deployments, Services and Pods need too (the default set but the cloud's and
# the ones for node addresses and volumes, which a node without a cloud provider lacks).
NODE_CONTROLLERS='*,-node-ipam-controller,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller,-persistentvolume-attach-detach-controller'
if [[ -n "${KUBE_NODE}" ]]; then
	KUBE_CONTROLLERS=${KUBE_CONTROLLERS:-${NODE_CONTROLLERS}}
	DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
else
	KUBE_CONTROLLERS=${KUBE_CONTROLLERS:-${DEFAULT_CONTROLLERS}}
	DAEMONS=(etcd kube-apiserver kube-controller-manager)
fi
# Every daemon that may run, for down and status whatever mode started them.
ALL_DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler)

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
		if [[ -n "${p}" ]] && { port_free "${p}" || daemon_running "${owner}"; }; then
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

# ensure_pki creates the CA and the service-account key pair once, and each certificate that is
# missing (a state made by an older kube.sh lacks the node's); later runs reuse them, so
# existing kubeconfigs and tokens stay valid. The serving certificate is made again when the
# addresses it must name changed (KUBE_ADDRESS, the service range).
ensure_pki() {
	if [[ ! -f "${PKI}/done" ]]; then
		rm -rf "${PKI}"
		pki_ca "${PKI}" provider-stackservices-dev-ca
		openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/sa.key" 2>/dev/null
		openssl ec -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub" 2>/dev/null
		touch "${PKI}/done"
	fi
	ensure_client admin "/O=system:masters/CN=admin"
	# system:masters as well: with --use-service-account-credentials=false every controller acts
	# as the controller-manager itself, and the garbage collector must delete any resource type
	# (including the provider's CRDs), which the bootstrap system:kube-controller-manager role
	# does not allow.
	ensure_client controller-manager "/O=system:masters/CN=system:kube-controller-manager"
	ensure_client scheduler "/CN=system:kube-scheduler"
	# What the apiserver shows kubelets (logs, exec, port-forward).
	ensure_client apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
	local sans="IP:127.0.0.1,IP:${KUBE_ADDRESS},IP:${SERVICE_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	if [[ "$(cat "${PKI}/apiserver.sans" 2>/dev/null)" != "${sans}" ]]; then
		pki_sign "${PKI}" apiserver "/CN=kube-apiserver" "${PKI_LEAF}
extendedKeyUsage=serverAuth
subjectAltName=${sans}"
		echo "${sans}" >"${PKI}/apiserver.sans"
	fi
}

# check_service_range refuses a state made with another service range: the `kubernetes`
# Service keeps the ClusterIP it was given, which the apiserver's certificate and kube-proxy
# would then not serve. (States older than this check were made with 10.0.0.0/24.)
check_service_range() {
	local made=10.0.0.0/24
	[[ -f "${STATE}/service-cidr" ]] && made=$(<"${STATE}/service-cidr")
	if [[ -d "${STATE}/etcd" && "${made}" != "${SERVICE_CIDR}" ]]; then
		die "${STATE} was made with the service range ${made}, not ${SERVICE_CIDR}: delete it (cluster/e2e.sh down --purge, cluster/dev.sh down --purge, or RUN_DIR=... cluster/kube.sh down --purge)"
	fi
	echo "${SERVICE_CIDR}" >"${STATE}/service-cidr"
}

# ensure_client NAME SUBJECT issues the client certificate $PKI/NAME unless it exists.
ensure_client() {
	[[ -f "${PKI}/$1.crt" ]] && return 0
	pki_sign "${PKI}" "$1" "$2" "${PKI_LEAF}
extendedKeyUsage=clientAuth"
}

# write_kubeconfig FILE CLIENT writes a kubeconfig for the client certificate $PKI/CLIENT.
write_kubeconfig() {
	pki_kubeconfig "$1" "https://${KUBE_ADDRESS}:${APISERVER_PORT}" "${PKI}/ca.crt" "${PKI}/$2.crt" "${PKI}/$2.key"
}

# ---------------------------------------------------------------------------------------------
# processes

# start NAME ARGS... starts the component NAME from the kube binaries (lib/daemon.sh).
start() {
	local name=$1
	shift
	daemon_start "${name}" "${LOGS}/${name}.log" "${BIN_DIR}/${name}" "$@"
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
	mkdir -p "${STATE}" "${LOGS}"
	# One `up` at a time: a second caller waits, then finds everything running.
	lock

	resolve_binaries
	local c all=true
	for c in "${DAEMONS[@]}"; do daemon_running "${c}" || all=false; done
	if ${all} && [[ -f "${PORTS_FILE}" ]]; then
		# shellcheck source=/dev/null
		source "${PORTS_FILE}"
		if apiserver_ready; then
			log "already running: https://${KUBE_ADDRESS}:${APISERVER_PORT} (KUBECONFIG=${KUBECONFIG_ADMIN})"
			return 0
		fi
	fi
	# PID files of components that died (crash, reboot, kill) would make wait_for report them
	# as exited before they are even started again.
	daemon_forget_dead "${ALL_DAEMONS[@]}"

	check_service_range
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

	local apiserver_mode=(
		--authorization-mode=RBAC
		--disable-admission-plugins=ServiceAccount
		# Endpoints may not hold a loopback address: the default reconciler would log a
		# validation error for the `kubernetes` Service forever.
		--endpoint-reconciler-type=none
	)
	if [[ -n "${KUBE_NODE}" ]]; then
		# shellcheck disable=SC2054 # a comma-separated flag value, not array elements
		apiserver_mode=(
			--authorization-mode=Node,RBAC
			--enable-admission-plugins=NodeRestriction
			--kubelet-client-certificate="${PKI}/apiserver-kubelet-client.crt"
			--kubelet-client-key="${PKI}/apiserver-kubelet-client.key"
			--kubelet-preferred-address-types=InternalIP
			# NodePorts stay out of the ranges the test bed picks its ports from.
			--service-node-port-range=46000-46099
		)
	fi
	start kube-apiserver \
		--etcd-servers="${etcd_url}" \
		--bind-address="${KUBE_ADDRESS}" \
		--advertise-address="${KUBE_ADDRESS}" \
		--secure-port="${APISERVER_PORT}" \
		--cert-dir="${STATE}/apiserver" \
		--tls-cert-file="${PKI}/apiserver.crt" \
		--tls-private-key-file="${PKI}/apiserver.key" \
		--client-ca-file="${PKI}/ca.crt" \
		--service-account-issuer="https://kubernetes.default.svc" \
		--service-account-key-file="${PKI}/sa.pub" \
		--service-account-signing-key-file="${PKI}/sa.key" \
		--service-cluster-ip-range="${SERVICE_CIDR}" \
		--profiling=false \
		"${apiserver_mode[@]}"
	wait_for "kube-apiserver /readyz" apiserver_ready

	start kube-controller-manager \
		--kubeconfig="${KUBECONFIG_KCM}" \
		--controllers="${KUBE_CONTROLLERS}" \
		--use-service-account-credentials=false \
		--root-ca-file="${PKI}/ca.crt" \
		--service-account-private-key-file="${PKI}/sa.key" \
		--service-cluster-ip-range="${SERVICE_CIDR}" \
		--allocate-node-cidrs=false \
		--secure-port=0 \
		--leader-elect=false
	wait_for "kube-controller-manager (default ServiceAccount)" controllers_working

	if [[ -n "${KUBE_NODE}" ]]; then
		write_kubeconfig "${STATE}/scheduler.kubeconfig" scheduler
		start kube-scheduler \
			--kubeconfig="${STATE}/scheduler.kubeconfig" \
			--authentication-kubeconfig="${STATE}/scheduler.kubeconfig" \
			--authorization-kubeconfig="${STATE}/scheduler.kubeconfig" \
			--leader-elect=false \
			--secure-port=0
	fi
	log "ready in $((SECONDS - t0))s: https://${KUBE_ADDRESS}:${APISERVER_PORT} (KUBECONFIG=${KUBECONFIG_ADMIN})"
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
		for ((i = ${#ALL_DAEMONS[@]} - 1; i >= 0; i--)); do
			case "${ALL_DAEMONS[i]}" in
			# Its last act, deleting its endpoint lease through its own listener, times out
			# once clients are gone: its data is in etcd, which stops cleanly after it.
			kube-apiserver) daemon_stop kube-apiserver 5 ;;
			*) daemon_stop "${ALL_DAEMONS[i]}" ;;
			esac
		done
	fi
	if ${purge}; then
		rm -rf "${STATE}"
		log "purged ${STATE}"
	fi
}

cmd_status() {
	local rc=0
	daemon_status "${DAEMONS[@]}" || rc=3
	if [[ -f "${PORTS_FILE}" ]]; then
		# shellcheck source=/dev/null
		source "${PORTS_FILE}"
		printf '%-24s https://%s:%s\n' "apiserver" "${KUBE_ADDRESS}" "${APISERVER_PORT}"
		printf '%-24s http://127.0.0.1:%s\n' "etcd" "${ETCD_CLIENT_PORT}"
		if daemon_running kube-apiserver && apiserver_ready; then
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
