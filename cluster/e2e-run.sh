#!/usr/bin/env bash
# cluster/e2e-run.sh: the end-to-end tests behind `make e2e` (and a step of `make test`).
#
# Builds both packages, brings up a real Crossplane with cluster/e2e.sh (its own control plane,
# registry and core; OpenStack must be up: cluster/openstack.sh up), installs the function,
# the provider and the configuration through the package manager, runs the smoke self-test and
# the claim tests in test/e2e, and stops what e2e.sh started.
#
# Environment: GO_TEST_FLAGS, E2E_KEEP=1 (leave the e2e Crossplane running afterwards).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
LOG_PREFIX=e2e-run.sh
cd "${REPO_ROOT}"

# cleanup stops the stack, and fails the run when that left anything on the machine (node.sh
# down checks: iptables chains, the bridge, mounts, cgroups, sysctls).
cleanup() {
	local rc=$?
	if [[ -z ${E2E_KEEP:-} ]]; then
		if ! cluster/e2e.sh down >_output/e2e-down.log 2>&1; then
			tail -n 5 _output/e2e-down.log >&2
			log "cluster/e2e.sh down failed (log: _output/e2e-down.log)"
			rc=1
		fi
	fi
	exit "${rc}"
}
trap cleanup EXIT

read -r -a go_test_flags <<<"${GO_TEST_FLAGS:-}"

# shellcheck source=cluster/lib/crossplane.sh
source cluster/lib/crossplane.sh
crossplane_up smoke

set -a
# shellcheck disable=SC1090
source "$(cluster/e2e.sh env)"
# shellcheck disable=SC1090
source "$(cluster/openstack.sh env)"
set +a
log "running test/e2e against ${KUBECONFIG}"
go test -count=1 -tags e2e -timeout 30m "${go_test_flags[@]}" -v ./test/e2e/... 2>&1 | tee _output/e2e.log |
	grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|_test.go:[0-9]+:' || true
tail -n 5 _output/e2e.log | grep -q '^ok' || {
	log "e2e tests failed; full log: _output/e2e.log; provider log: $(dirname "${KUBECONFIG}")/../logs/provider.log"
	tail -n 40 _output/e2e.log >&2
	exit 1
}
