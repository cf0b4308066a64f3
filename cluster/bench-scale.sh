#!/usr/bin/env bash
# cluster/bench-scale.sh: the scale benchmark behind `make bench-scale` (part of `make bench`).
#
# Runs test/scale: the provider binary built from this tree against a control plane of its own
# ($RUN_DIR/bench, cluster/kube.sh) with the provider's CRDs, the test bed's Neutron
# (cluster/openstack.sh up) and versitygw (cluster/versitygw.sh up), next to the floor, for each
# N of three scenarios: SecurityGroups of 5 rules (BENCH_SCALE_N, default 100,1000),
# SecurityGroupAttachments over 50 servers each (BENCH_SCALE_ATTACHMENTS, default 4,20) and
# Buckets with a canned ACL and versioning (BENCH_SCALE_BUCKETS, default 100,1000); an empty
# list skips a scenario. Writes _output/bench/scale.json and docs/benchmarks-<scenario>.svg.
# Its control plane is stopped and deleted at the end; the test bed stays up.
#
# Environment: RUN_DIR, BENCH_SCALE_N, BENCH_SCALE_ATTACHMENTS, BENCH_SCALE_BUCKETS,
# BENCH_SCALE_OUT (the results file), BENCH_SCALE_SVG_DIR (where plots go; empty: none),
# BENCH_SCALE_CONCURRENCY (default 20: the test bed's Neutron answers 500 to a floor of 100 at
# once), BENCH_SCALE_POLL (default 30s).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
LOG_PREFIX=bench-scale.sh
cd "${REPO_ROOT}"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
BENCH_RUN=${RUN_DIR}/bench

cleanup() {
	local rc=$?
	RUN_DIR=${BENCH_RUN} cluster/kube.sh down --purge >/dev/null 2>&1 || true
	exit "${rc}"
}
trap cleanup EXIT

cluster/openstack.sh up
cluster/tools.sh versitygw
cluster/versitygw.sh up
RUN_DIR=${BENCH_RUN} cluster/kube.sh up
KUBECONFIG=$(RUN_DIR=${BENCH_RUN} cluster/kube.sh kubeconfig)
export KUBECONFIG
"$(cluster/tools.sh path kube)/kubectl" apply --server-side -f package/crds >/dev/null
"$(cluster/tools.sh path kube)/kubectl" wait --for=condition=Established --timeout=60s -f package/crds >/dev/null

mkdir -p _output/bench
log "building the provider"
go build -o _output/bench/provider ./cmd/provider
# shellcheck disable=SC1090
source "$(cluster/openstack.sh env)"
# shellcheck disable=SC1090
source "$(cluster/versitygw.sh env)"
go run ./test/scale -provider _output/bench/provider \
	-securitygroups "${BENCH_SCALE_N-100,1000}" -attachments "${BENCH_SCALE_ATTACHMENTS-4,20}" \
	-buckets "${BENCH_SCALE_BUCKETS-100,1000}" \
	-concurrency "${BENCH_SCALE_CONCURRENCY:-20}" -poll "${BENCH_SCALE_POLL:-30s}" \
	-out "${BENCH_SCALE_OUT:-_output/bench/scale.json}" -svg-dir "${BENCH_SCALE_SVG_DIR-docs}"
