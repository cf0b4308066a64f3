#!/usr/bin/env bash
# cluster/dev.sh: the local development loop behind `make dev`.
#
# Usage:
#   cluster/dev.sh up          OpenStack up, and a real Crossplane (its own control plane with
#                              a node, an OCI registry on 127.0.0.1, core) with the provider
#                              and configuration packages built from this tree installed
#                              through the package manager, the provider running as a Pod from
#                              its package's image; credentials, every example managed resource
#                              and every claim of examples/claims applied; waits until all are
#                              Ready and Synced
#   cluster/dev.sh down        stop all of it (data is kept; the etcd members are servers of
#                              the test bed's Nova, which stay until OpenStack stops)
#   cluster/dev.sh down --purge
#                              delete the examples first (their servers, groups, buckets and
#                              keys go from OpenStack), then stop and forget the Crossplane
#                              stack, so that the next `up` starts from nothing
#   cluster/dev.sh status
#   cluster/dev.sh kubeconfig  print the path of the control plane's kubeconfig
#
# It is the stack the e2e tests run (cluster/lib/crossplane.sh, cluster/e2e.sh) with its state
# in $RUN_DIR/dev. There is one node per machine (its bridge and paths are fixed): stop this
# stack (`make dev-down`) before `make test` runs its own. Running `up` again after a change
# rebuilds the packages and the provider and installs them again. The credentials Secret is
# written from the test bed's clouds.yaml; nothing secret is committed.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
DEV_POLL=${DEV_POLL:-15s}
READY_TIMEOUT=${READY_TIMEOUT:-180}
# cluster/e2e.sh keeps the stack in $RUN_DIR/e2e: dev's is $RUN_DIR/dev/e2e.
DEV_RUN=${RUN_DIR}/dev
export E2E_PROVIDER_POLL=${DEV_POLL}
# shellcheck source=cluster/lib/crossplane.sh
source "${REPO_ROOT}/cluster/lib/crossplane.sh"
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
LOG_PREFIX=dev.sh

kubeconfig() { echo "${DEV_RUN}/e2e/kube/kubeconfig"; }
kubectl_() { "$(cluster/tools.sh path kube)/kubectl" --kubeconfig "$(kubeconfig)" "$@"; }

credentials() {
	# shellcheck disable=SC1090
	source "$(cluster/openstack.sh env)"
	kubectl_ create namespace crossplane-system --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	kubectl_ -n crossplane-system create secret generic openstack-credentials \
		--from-file=clouds.yaml="${OS_CLIENT_CONFIG_FILE}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	kubectl_ -n default create secret generic openstack-credentials \
		--from-file=clouds.yaml="${OS_CLIENT_CONFIG_FILE}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
}

# demo_server gives the examples something to act on: a "server" in the shape Nova leaves in
# Neutron (a port with device_owner compute:nova and the server UUID as device_id) and a
# Kubernetes Node for it labelled role=web, as the OpenStack cloud provider would register it.
# This is exactly what SecurityGroupAttachment looks at.
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

# wait_ready waits until every managed resource and every composite is Ready and Synced (a
# resource can stay Ready while its changes are refused).
wait_ready() {
	local deadline=$((SECONDS + READY_TIMEOUT)) pending kind
	while :; do
		pending=''
		for kind in managed composite; do
			pending+=$(kubectl_ get "${kind}" -A -o jsonpath='{range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{.status.conditions[?(@.type=="Synced")].status}{"\n"}{end}' | grep -v '=TrueTrue$' || true)
		done
		[[ -z ${pending} ]] && return 0
		if ((SECONDS > deadline)); then
			kubectl_ get managed,composite -A -o wide >&2 || true
			die "not Ready after ${READY_TIMEOUT}s: ${pending//$'\n'/ }"
		fi
		sleep 2
	done
}

cmd_up() {
	local start=${SECONDS}
	cluster/openstack.sh up
	RUN_DIR=${DEV_RUN} crossplane_up no-smoke
	credentials
	demo_server
	log "applying examples/"
	kubectl_ create namespace shop --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	# Configs first, composites last: they need the ClusterProviderConfig.
	local d
	for d in providerconfig network objectstorage etcd claims; do
		kubectl_ apply -f "examples/${d}"
	done
	wait_ready
	kubectl_ get managed,composite -A
	log "up in $((SECONDS - start))s. kubeconfig: $(kubeconfig); provider log: kubectl -n crossplane-system logs -l pkg.crossplane.io/provider=stackservices-provider-stackservices"
	log "OpenStack CLI: source $(cluster/openstack.sh env); openstack --os-cloud demo port show dev-web-1"
}

cmd_down() {
	if [[ ${1:-} == --purge ]]; then
		delete_examples
		RUN_DIR=${DEV_RUN} cluster/e2e.sh down --purge
	else
		RUN_DIR=${DEV_RUN} cluster/e2e.sh down
	fi
	cluster/openstack.sh down
}

# names KIND prints NAMESPACE/NAME of every object of the kind.
names() { kubectl_ get "$1" -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}'; }

# delete_examples deletes what `up` applied, composites first, and waits until every managed
# resource is gone (so is what it made in OpenStack). Nothing to do when the stack is down.
delete_examples() {
	RUN_DIR=${DEV_RUN} cluster/e2e.sh status >/dev/null 2>&1 || return 0
	log "deleting the examples, their buckets and the objects in them"
	local d b deadline=$((SECONDS + READY_TIMEOUT))
	# A bucket that holds objects is deleted only when asked to delete them too, and an
	# ObjectBucket keeps its bucket unless its deletionPolicy says Delete (an EtcdDatabase always
	# keeps its backups: the next `up` takes them back). adoptExisting: a bucket kept by an earlier
	# stack is deleted too.
	for b in $(names objectbuckets.platform.stackservices.io); do
		kubectl_ -n "${b%%/*}" patch objectbuckets.platform.stackservices.io "${b#*/}" --type=merge \
			-p '{"spec":{"deletionPolicy":"Delete","forceDestroy":true,"adoptExisting":true}}' >/dev/null
		until [[ $(kubectl_ -n "${b%%/*}" get buckets.objectstorage.m.stackservices.io -l "crossplane.io/composite=${b#*/}" \
			-o jsonpath='{.items[*].spec.managementPolicies[*]}{.items[*].spec.forProvider.forceDestroy}') == '*true' ]]; do
			((SECONDS < deadline)) || die "the composition did not pass deletionPolicy Delete on to ${b}'s bucket"
			sleep 1
		done
	done
	for b in $(names buckets.objectstorage.m.stackservices.io); do
		kubectl_ -n "${b%%/*}" patch buckets.objectstorage.m.stackservices.io "${b#*/}" --type=merge \
			-p '{"spec":{"forProvider":{"forceDestroy":true}}}' >/dev/null
	done
	# Composites first, then the backups (they need their bucket's keys to delete their
	# objects), then the rest.
	kubectl_ delete --ignore-not-found --timeout="${READY_TIMEOUT}s" -f examples/claims >/dev/null
	kubectl_ delete --ignore-not-found --timeout="${READY_TIMEOUT}s" -A --all etcdbackups.etcd.m.stackservices.io >/dev/null
	for d in etcd objectstorage network; do
		kubectl_ delete --ignore-not-found --wait=false -f "examples/${d}" >/dev/null
	done
	until [[ -z $(kubectl_ get managed,composite -A -o name) ]]; do
		((SECONDS < deadline)) || die "not deleted after ${READY_TIMEOUT}s: $(kubectl_ get managed,composite -A -o name | tr '\n' ' ')"
		sleep 2
	done
}

cmd_status() {
	RUN_DIR=${DEV_RUN} cluster/e2e.sh status || true
	cluster/openstack.sh status || true
}

cd "${REPO_ROOT}"
case "${1:-}" in
up) cmd_up ;;
down) cmd_down "${2:-}" ;;
status) cmd_status ;;
kubeconfig) kubeconfig ;;
*)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
