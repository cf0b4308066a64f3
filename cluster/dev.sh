#!/usr/bin/env bash
# cluster/dev.sh: the local development loop behind `make dev`.
#
# Usage:
#   cluster/dev.sh up     control plane + OpenStack up, CRDs installed, provider running (built
#                         from this tree), credentials and examples applied; waits until every
#                         example managed resource is Ready
#   cluster/dev.sh down   stop the provider, the control plane and OpenStack (data is kept)
#   cluster/dev.sh status
#
# The provider runs as a local process (there is no kubelet here) against the control plane of
# cluster/kube.sh, logging to $RUN_DIR/provider/provider.log. Its metrics and probe listeners
# take free ports. The credentials Secret is written from the test bed's clouds.yaml; nothing
# secret is committed.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/members.sh
source "${REPO_ROOT}/cluster/lib/members.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
STATE=${RUN_DIR}/provider
BIN=${REPO_ROOT}/_output/bin/dev/provider
DEV_POLL=${DEV_POLL:-15s}
# EtcdClusters of machines.type Local run their members under here, with this etcd.
MACHINES_DIR=${RUN_DIR}/machines
DEV_ETCD_VERSION=${DEV_ETCD_VERSION:-v3.6.16}
READY_TIMEOUT=${READY_TIMEOUT:-180}

log() { printf 'dev.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

kubectl_() { "$(cluster/tools.sh path kube)/kubectl" --kubeconfig "$(cluster/kube.sh kubeconfig)" "$@"; }

provider_running() {
	[[ -f ${STATE}/provider.pid ]] && kill -0 "$(cat "${STATE}/provider.pid")" 2>/dev/null
}

stop_provider() {
	provider_running || return 0
	local pid
	pid=$(cat "${STATE}/provider.pid")
	kill -TERM "${pid}" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "${pid}" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "${pid}" 2>/dev/null || true
	rm -f "${STATE}/provider.pid"
}

credentials() {
	# shellcheck disable=SC1090
	source "$(cluster/openstack.sh env)"
	kubectl_ create namespace crossplane-system --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	kubectl_ -n crossplane-system create secret generic openstack-credentials \
		--from-file=clouds.yaml="${OS_CLIENT_CONFIG_FILE}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	kubectl_ -n default create secret generic openstack-credentials \
		--from-file=clouds.yaml="${OS_CLIENT_CONFIG_FILE}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
}

start_provider() {
	mkdir -p "${STATE}" "$(dirname "${BIN}")"
	log "building the provider"
	go build -o "${BIN}" ./cmd/provider
	cluster/tools.sh "etcd@${DEV_ETCD_VERSION}"
	stop_provider
	local metrics health
	pick_port metrics
	pick_port health
	KUBECONFIG=$(cluster/kube.sh kubeconfig) setsid "${BIN}" --debug --poll="${DEV_POLL}" \
		--metrics-bind-address="127.0.0.1:${metrics}" --health-probe-bind-address="127.0.0.1:${health}" \
		--enable-local-machines --local-machines-dir="${MACHINES_DIR}" \
		--etcd-binaries-dir="$(dirname "$(cluster/tools.sh path "etcd@${DEV_ETCD_VERSION}")")" \
		>"${STATE}/provider.log" 2>&1 </dev/null &
	echo $! >"${STATE}/provider.pid"
	printf 'METRICS=127.0.0.1:%s\nHEALTH=127.0.0.1:%s\n' "${metrics}" "${health}" >"${STATE}/ports.env"
	for _ in $(seq 1 50); do
		curl -fsS "http://127.0.0.1:${health}/readyz" >/dev/null 2>&1 && return 0
		provider_running || break
		sleep 0.2
	done
	tail -n 30 "${STATE}/provider.log" >&2 || true
	die "the provider did not become ready; log: ${STATE}/provider.log"
}

# demo_server gives the examples something to act on: a "server" in the shape Nova leaves in
# Neutron (a port with device_owner compute:nova and the server UUID as device_id) and a
# Kubernetes Node for it labelled role=web, as the OpenStack cloud provider would register it.
# There is no Nova or kubelet here; this is exactly what SecurityGroupAttachment looks at.
demo_server() {
	# shellcheck disable=SC1090
	source "$(cluster/openstack.sh env)"
	local os=(openstack --os-cloud demo) server
	if ! server=$(kubectl_ get node dev-web-1 -o jsonpath='{.spec.providerID}' 2>/dev/null); then
		server=$(/usr/bin/python3 -c 'import uuid; print(uuid.uuid4())')
		kubectl_ apply -f - >/dev/null <<-YAML
			apiVersion: v1
			kind: Node
			metadata:
			  name: dev-web-1
			  labels: {role: web}
			spec:
			  providerID: openstack:///${server}
		YAML
	fi
	server=${server##*/}
	"${os[@]}" network show dev-net >/dev/null 2>&1 || "${os[@]}" network create dev-net >/dev/null
	if [[ -z $("${os[@]}" port list --device-id "${server}" -f value -c ID) ]]; then
		"${os[@]}" port create --network dev-net --device-owner compute:nova --device "${server}" dev-web-1 >/dev/null
	fi
	log "demo server ${server}: node dev-web-1 (role=web), port on dev-net"
}

wait_ready() {
	local deadline=$((SECONDS + READY_TIMEOUT)) pending
	while :; do
		pending=$(kubectl_ get managed -A -o jsonpath='{range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -v '=True$' || true)
		[[ -z ${pending} ]] && return 0
		if ((SECONDS > deadline)); then
			kubectl_ get managed -A -o wide >&2 || true
			die "not Ready after ${READY_TIMEOUT}s: ${pending//$'\n'/ }"
		fi
		sleep 2
	done
}

cmd_up() {
	local start=${SECONDS}
	cluster/kube.sh up
	cluster/openstack.sh up
	log "installing CRDs"
	kubectl_ apply --server-side -f package/crds >/dev/null
	kubectl_ wait --for=condition=Established --timeout=60s -f package/crds >/dev/null
	credentials
	demo_server
	start_provider
	log "applying examples/ (claims need Crossplane: see make e2e)"
	find examples -name '*.yaml' -not -path 'examples/claims/*' -print0 | sort -z | xargs -0 -n1 -I{} "$(cluster/tools.sh path kube)/kubectl" --kubeconfig "$(cluster/kube.sh kubeconfig)" apply -f {}
	wait_ready
	kubectl_ get managed -A
	log "up in $((SECONDS - start))s. kubeconfig: $(cluster/kube.sh kubeconfig); provider log: ${STATE}/provider.log"
	log "OpenStack CLI: source $(cluster/openstack.sh env); openstack --os-cloud demo port show dev-web-1"
}

cmd_down() {
	stop_provider
	# The provider starts them again (same data) at its next start.
	stop_members "${MACHINES_DIR}"
	cluster/kube.sh down
	cluster/openstack.sh down
}

cmd_status() {
	if provider_running; then
		echo "provider   running (pid $(cat "${STATE}/provider.pid")), log ${STATE}/provider.log"
	else
		echo "provider   stopped"
	fi
	cluster/kube.sh status || true
	cluster/openstack.sh status || true
}

cd "${REPO_ROOT}"
case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
