#!/usr/bin/env bash
# cluster/test.sh: everything `make test` runs, with the real servers it needs.
#
# Runs the unit tests and renders the configuration's Compositions offline with `crossplane
# composition render` (test/render); brings up (building on first use) the Kubernetes binaries the
# integration tests start per run, the etcd versions the EtcdCluster tests run, the local
# OpenStack (Keystone, Neutron, Swift with S3) and versitygw (a second S3 server); runs the
# integration tests against the real servers, the package build and the end-to-end tests
# through a real Crossplane; then stops what it started. Servers that were already running (a
# `make dev` session) are left running. Every step prints how long it took.
#
# Environment: GO_TEST_FLAGS (extra flags for go test), TEST_RUN (a -run pattern for the
# integration tests), SKIP_XPKG=1 (skip the package builds), SKIP_E2E=1 (skip the e2e tests).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
LOG_PREFIX=test.sh
cd "${REPO_ROOT}"

# shellcheck source=cluster/lib/members.sh
source "${REPO_ROOT}/cluster/lib/members.sh"

step() {
	local name=$1 start=${SECONDS}
	shift
	log "${name}..."
	"$@"
	log "${name}: done in $((SECONDS - start))s"
}

started_openstack=
started_versitygw=
# Local etcd members of the integration tests live under here (see test/harness).
TEST_MACHINES_DIR=${REPO_ROOT}/_output/test-machines
export TEST_MACHINES_DIR

cleanup() {
	local rc=$?
	stop_members "${TEST_MACHINES_DIR}" KILL
	rm -rf "${TEST_MACHINES_DIR}"
	if [[ -n ${started_openstack} ]]; then
		cluster/openstack.sh down || true
	fi
	if [[ -n ${started_versitygw} ]]; then
		cluster/versitygw.sh down || true
	fi
	log "total $((SECONDS))s, exit ${rc}"
	exit "${rc}"
}
trap cleanup EXIT

# GO_TEST_FLAGS is a list of flags: split on purpose.
read -r -a go_test_flags <<<"${GO_TEST_FLAGS:-}"

unit() { go test -count=1 "${go_test_flags[@]}" ./...; }

integration() {
	# shellcheck disable=SC1090
	source "$(cluster/openstack.sh env)"
	# shellcheck disable=SC1090
	source "$(cluster/versitygw.sh env)"
	mkdir -p "${TEST_MACHINES_DIR}"
	KUBEBUILDER_ASSETS=$(cluster/tools.sh path kube) ETCD_BINARIES_DIR=${ETCD_BINARIES_DIR} \
		CLOUD_INIT=$(cluster/tools.sh path cloud-init) \
		go test -count=1 -tags integration -timeout 40m "${go_test_flags[@]}" \
		${TEST_RUN:+-run "${TEST_RUN}"} -v ./internal/... ./test/integration/... 2>&1 | tee "${REPO_ROOT}/_output/integration.log" |
		grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic|test bed)|_test.go:[0-9]+:' || true
	# tee hides go test's status: the log tells it (several packages run, so any FAIL counts).
	if grep -qE '^(FAIL|--- FAIL|panic:)' "${REPO_ROOT}/_output/integration.log" ||
		! grep -q '^ok' "${REPO_ROOT}/_output/integration.log"; then
		log "integration tests failed; full log: _output/integration.log"
		grep -E '^(FAIL|--- FAIL|panic:)' "${REPO_ROOT}/_output/integration.log" >&2 || true
		tail -n 60 "${REPO_ROOT}/_output/integration.log" >&2
		return 1
	fi
}

render() {
	cluster/tools.sh crossplane-cli crossplane-core function-pat
	CROSSPLANE_CLI=$(cluster/tools.sh path crossplane-cli) \
		CROSSPLANE_CORE="$(cluster/tools.sh path crossplane-core)/crossplane" \
		FUNCTION_PAT_BINARY="$(cluster/tools.sh path function-pat)/function" \
		go test -count=1 -tags render "${go_test_flags[@]}" ./test/render/...
}

mkdir -p _output
step "unit tests" unit
step "composition render tests" render
# The etcd versions the EtcdCluster tests run (upgrades go from each to the next).
step "etcd binaries" cluster/tools.sh etcd@v3.5.35 etcd@v3.6.16 etcd@v3.7.3
ETCD_BINARIES_DIR=$(dirname "$(cluster/tools.sh path etcd@v3.6.16)")
step "kubernetes binaries" cluster/tools.sh kube
# Debian's cloud-init, unpacked, for the schema check of the members' user-data.
step "cloud-init" cluster/tools.sh cloud-init
if ! cluster/openstack.sh status >/dev/null 2>&1; then
	started_openstack=1
fi
step "openstack up" cluster/openstack.sh up
step "versitygw binary" cluster/tools.sh versitygw
if ! cluster/versitygw.sh status >/dev/null 2>&1; then
	started_versitygw=1
fi
step "versitygw up" cluster/versitygw.sh up
step "integration tests" integration
if [[ -z ${SKIP_XPKG:-} ]]; then
	step "package build" cluster/xpkg.sh
	step "configuration package build" cluster/xpkg.sh configuration
fi
if [[ -z ${SKIP_E2E:-} ]]; then
	step "end-to-end tests through Crossplane" cluster/e2e-run.sh
fi
