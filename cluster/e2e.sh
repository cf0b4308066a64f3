#!/usr/bin/env bash
# cluster/e2e.sh: a real Crossplane for the end-to-end tests and `make dev`, on a real node.
#
# Usage:
#   cluster/e2e.sh up                      a cluster with a node (cluster/node.sh with
#                                          RUN_DIR=$RUN_DIR/e2e), an in-memory OCI registry,
#                                          Crossplane core and its RBAC manager; the
#                                          function-patch-and-transform package pushed (idempotent)
#   cluster/e2e.sh down [--purge]          stop all of it and leave nothing on the machine; the
#                                          runtimes' logs are kept in logs/; --purge deletes state
#   cluster/e2e.sh status                  what runs where; exit 0 only when everything of `up` runs
#   cluster/e2e.sh env                     print the path of the env file (KUBECONFIG, E2E_REGISTRY,
#                                          ports, package names) for tests to source
#   cluster/e2e.sh install-function        Function function-patch-and-transform Healthy: its Pod
#                                          serves, and core resolves its Service
#   cluster/e2e.sh install-provider XPKG   push XPKG, Provider Healthy with the runtime config of
#                                          examples/provider, its managed resources activated, its
#                                          Pod ready
#   cluster/e2e.sh install-configuration XPKG [OWNER/NAME]
#                                          push XPKG (as stackservices/configuration-stackservices
#                                          unless named), Configuration Healthy, its XRDs ready
#   cluster/e2e.sh smoke                   self-test after install-function and install-provider:
#                                          a trivial Configuration (cluster/e2e/smoke) composes
#                                          a SecurityGroup for a claim and for a namespaced XR
#
# Crossplane runs as it does for users: core with the Deployment package runtime installs
# packages from real .xpkg files pulled from the registry, and runs each Function's and
# Provider's runtime image as a Deployment on the node (containerd pulls the image from the
# registry). The RBAC manager runs as a Pod too (from an image of the core binary), and grants
# the provider's ServiceAccount what the package asks for; examples/provider grants the rest
# (reading Nodes, deleting an EtcdCluster's SecurityGroup). Nothing here writes a package revision's status. Core itself runs on the host,
# in the node's mount namespace, where cluster/node.sh's hosts file stands in for cluster DNS
# (core calls functions at <service>.<namespace>:9443).
#
# The provider's Pod uses the host's network (a hostNetwork overlay of examples/provider's
# runtime config, as a platform team would apply to reach a private cloud from the nodes): the
# test bed's OpenStack listens on 127.0.0.1, and its servers are routed from the host only. Its
# metrics and health ports are chosen here (PROVIDER_*_PORT). EtcdClusters run on the test bed's
# Nova servers, as examples/providerconfig's etcdMachines says; local machines (processes on
# the provider's host) are for the integration tests only.
#
# Package names: packages are pushed to 127.0.0.1:<registry port>/<repository>. The Function,
# Provider and Configuration objects name them by their upstream source (E2E_*_SOURCE, e.g.
# xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform) and an ImageConfig rewrites
# those prefixes to the local registry, so a Configuration's dependsOn can name the real upstream
# packages and still resolve here; dependency resolution is keyed on the original source.
#
# State lives in $RUN_DIR/e2e (RUN_DIR defaults to <repo root>/.run): kube/ (kube.sh), node/
# (node.sh), pki/ (core's client certificate), logs/, *.pid, ports.env, e2e.env, cache/ (core's
# package cache), installed/ (what install-* did, replayed by the next `up`: the registry is in
# memory). `down` saves the provider's and the function's Pod logs to logs/.
#
# Environment: RUN_DIR, CACHE_DIR, E2E_TIMEOUT (seconds per wait, default 300), E2E_DEBUG=1
# (core and function debug logs), E2E_PROVIDER_POLL (default 10s), E2E_PROVIDER_SOURCE,
# E2E_CONFIGURATION_SOURCE, E2E_FUNCTION_PAT_SOURCE (upstream package names, without tag),
# E2E_PACKAGE_TAG (tag for install-provider/-configuration; default from the .xpkg file name).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
CACHE_DIR=${CACHE_DIR:-${REPO_ROOT}/.cache}
export CACHE_DIR
STATE=${RUN_DIR}/e2e
LOGS=${STATE}/logs
INSTALLED=${STATE}/installed
PORTS_FILE=${STATE}/ports.env
ENV_FILE=${STATE}/e2e.env
LOG_PREFIX=e2e.sh
PID_DIR=${STATE}
# Everything we run (kubectl, core, functions, the provider) talks to the e2e control plane only.
export KUBECONFIG=${STATE}/kube/kubeconfig
# Binaries built from the nested tools/ module (cluster/tools.sh bed).
TOOLS_BIN=$("${REPO_ROOT}/cluster/tools.sh" path bed)

E2E_TIMEOUT=${E2E_TIMEOUT:-300}
WAIT_TIMEOUT=${E2E_TIMEOUT}
WAIT_INTERVAL=0.5
E2E_DEBUG=${E2E_DEBUG:-}
E2E_PROVIDER_POLL=${E2E_PROVIDER_POLL:-10s}

CROSSPLANE_NAMESPACE=crossplane-system
# The RBAC manager's image: the core binary, imported into the node (never pulled).
RBAC_MANAGER_IMAGE=stackservices.local/crossplane
# The provider's runtime config and the objects around it, as a platform team applies them.
PROVIDER_RUNTIME=${REPO_ROOT}/examples/provider/runtime.yaml
PROVIDER_RUNTIME_CONFIG=provider-stackservices

FUNCTION_PAT_VERSION=${FUNCTION_PAT_VERSION:-v0.5.0}
FUNCTION_PAT_REPOSITORY=crossplane-contrib/function-patch-and-transform
PROVIDER_REPOSITORY=stackservices/provider-stackservices
CONFIGURATION_REPOSITORY=stackservices/configuration-stackservices
# Upstream names the package objects use (see the header). Their prefixes up to the repository
# are rewritten to the local registry by the ImageConfig of `up`.
E2E_FUNCTION_PAT_SOURCE=${E2E_FUNCTION_PAT_SOURCE:-xpkg.crossplane.io/${FUNCTION_PAT_REPOSITORY}}
E2E_PROVIDER_SOURCE=${E2E_PROVIDER_SOURCE:-xpkg.stackservices.io/${PROVIDER_REPOSITORY}}
E2E_CONFIGURATION_SOURCE=${E2E_CONFIGURATION_SOURCE:-xpkg.stackservices.io/${CONFIGURATION_REPOSITORY}}

# Object names: what Crossplane's dependency resolver would name them (xpkg.ToDNSLabel of the
# repository), so a Configuration's dependsOn finds ours instead of creating a second one.
FUNCTION_PAT_NAME=crossplane-contrib-function-patch-and-transform
PROVIDER_NAME=stackservices-provider-stackservices
CONFIGURATION_NAME=stackservices-configuration-stackservices

# Port variables of ports.env and the component that listens on each.
PORT_VARS=(REGISTRY_PORT CORE_METRICS_PORT CORE_HEALTH_PORT CORE_WEBHOOK_PORT
	PROVIDER_METRICS_PORT PROVIDER_HEALTH_PORT)
# Daemons in start order; `down` stops them in reverse.
DAEMONS=(registry crossplane)

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------------------------------------
# tools

KUBE_BIN='' CORE_DIR='' FN_DIR='' CLI=''
resolve_tools() {
	# Each is a cache hit (a stat) once built; a cold build of all of them takes minutes.
	"${REPO_ROOT}/cluster/tools.sh" kube crossplane-core "function-pat@${FUNCTION_PAT_VERSION}" crossplane-cli bed
	KUBE_BIN=$("${REPO_ROOT}/cluster/tools.sh" path kube)
	CORE_DIR=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-core)
	FN_DIR=$("${REPO_ROOT}/cluster/tools.sh" path "function-pat@${FUNCTION_PAT_VERSION}")
	CLI=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-cli)
}

# resolve_tools_quietly finds the binaries without building anything (for down, status, env).
resolve_tools_quietly() {
	KUBE_BIN=$("${REPO_ROOT}/cluster/tools.sh" path kube)
	CORE_DIR=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-core)
	FN_DIR=$("${REPO_ROOT}/cluster/tools.sh" path "function-pat@${FUNCTION_PAT_VERSION}")
	CLI=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-cli)
}

kubectl_() { "${KUBE_BIN}/kubectl" --request-timeout=30s "$@"; }

# ---------------------------------------------------------------------------------------------
# ports (the same scheme as kube.sh: chosen once, reused while free)

# ours PORT_VAR PORT: the port is held by what we run on it (a daemon of ours, or the
# provider's Pod, which listens on the host's network).
ours() {
	case "$1" in
	REGISTRY_PORT) daemon_running registry ;;
	CORE_*) daemon_running crossplane ;;
	PROVIDER_*) ss -Htlnp "sport = :$2" 2>/dev/null | grep -q '"provider"' ;;
	esac
}

# load_ports reads ports.env, picking (and recording) a port for every variable that has none or
# whose port someone else took while our component was down.
load_ports() {
	local var
	for var in "${PORT_VARS[@]}"; do printf -v "${var}" '%s' ''; done
	# shellcheck source=/dev/null
	[[ -f "${PORTS_FILE}" ]] && source "${PORTS_FILE}"
	# The e2e control plane's ports are taken, even when it is down right now.
	if [[ -f "${STATE}/kube/ports.env" ]]; then
		PICKED="${PICKED:-} $(sed -n 's/^[A-Z_]*=//p' "${STATE}/kube/ports.env" | tr '\n' ' ')"
	fi
	for var in "${PORT_VARS[@]}"; do
		local p=${!var}
		if [[ -n "${p}" ]] && { port_free "${p}" || ours "${var}" "${p}"; }; then
			PICKED="${PICKED:-} ${p}"
			continue
		fi
		pick_port "${var}"
	done
	local tmp=${PORTS_FILE}.tmp
	for var in "${PORT_VARS[@]}"; do printf '%s=%s\n' "${var}" "${!var}"; done >"${tmp}"
	mv -f "${tmp}" "${PORTS_FILE}"
}

# ---------------------------------------------------------------------------------------------
# processes

http_ok() { curl -fsS --max-time 2 -o /dev/null "$1"; }

node_sh() { RUN_DIR=${STATE} "${REPO_ROOT}/cluster/node.sh" "$@" 7>&-; }

# ---------------------------------------------------------------------------------------------
# registry and packages

registry() { echo "127.0.0.1:${REGISTRY_PORT}"; }

# pushed_digest REPOSITORY TAG prints the digest of the manifest the registry holds for the tag.
pushed_digest() {
	curl -fsI --max-time 5 \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		-H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
		"http://$(registry)/v2/$1/manifests/$2" |
		tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: *//p'
}

# push XPKG REPOSITORY TAG pushes a package file. The CLI speaks plain HTTP to 127.0.0.1:*.
push() {
	local xpkg=$1 repo=$2 tag=$3
	"${CLI}" xpkg push -f "${xpkg}" "$(registry)/${repo}:${tag}" >>"${LOGS}/push.log" 2>&1 || {
		tail -n 20 "${LOGS}/push.log" >&2
		die "cannot push ${xpkg} to $(registry)/${repo}:${tag}"
	}
}

# tag_of XPKG derives a tag from a file named <name>-<semver>.xpkg (what cluster/xpkg.sh makes).
# Package tags must be semantic versions: the dependency resolver compares them.
tag_of() {
	if [[ -n "${E2E_PACKAGE_TAG:-}" ]]; then
		echo "${E2E_PACKAGE_TAG}"
		return
	fi
	local base=${1##*/}
	if [[ "${base}" =~ -(v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?)\.xpkg$ ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		echo v0.0.0-dev
	fi
}

# function_pat_xpkg builds (once per version) function-patch-and-transform's package without
# Docker: a runtime image of the binary at /function (its own Dockerfile's entrypoint) embedded
# into `crossplane xpkg build` of its upstream package root.
FN_XPKG=
function_pat_xpkg() {
	local dir=${TOOLS_BIN}/packages
	FN_XPKG=${dir}/function-patch-and-transform-${FUNCTION_PAT_VERSION}.xpkg
	[[ -f "${FN_XPKG}" ]] && return 0
	mkdir -p "${dir}"
	# Names of this process only until the final rename: the cache is shared by every RUN_DIR.
	local image=${dir}/function-patch-and-transform-runtime-${FUNCTION_PAT_VERSION}.tar.$$
	"${TOOLS_BIN}/runtime-image" -binary "${FN_DIR}/function" -entrypoint /function \
		-out "${image}" -tag "${FUNCTION_PAT_REPOSITORY}:${FUNCTION_PAT_VERSION}" >/dev/null ||
		die "cannot build the function's runtime image"
	# --examples-root: the CLI defaults to ./examples of the working directory.
	"${CLI}" xpkg build --package-root="${FN_DIR}/package" --examples-root="${dir}/no-examples" \
		--embed-runtime-image-tarball="${image}" --package-file="${FN_XPKG}.$$" \
		>>"${LOGS}/push.log" 2>&1 || {
		tail -n 20 "${LOGS}/push.log" >&2
		rm -f "${image}" "${FN_XPKG}.$$"
		die "cannot build the function package"
	}
	rm -f "${image}"
	mv -f "${FN_XPKG}.$$" "${FN_XPKG}"
	log "built ${FN_XPKG#"${REPO_ROOT}"/}"
}

# image_config makes every upstream source prefix of ours pull from the local registry.
image_config() {
	local prefixes=() src
	for src in "${E2E_FUNCTION_PAT_SOURCE}" "${E2E_PROVIDER_SOURCE}" "${E2E_CONFIGURATION_SOURCE}"; do
		# The prefix is everything up to the repository: <host>/<owner>/.
		local repo_owner=${src%/*}
		[[ " ${prefixes[*]} " == *" ${repo_owner}/ "* ]] || prefixes+=("${repo_owner}/")
	done
	local i=0 p
	for p in "${prefixes[@]}"; do
		[[ "${p}" == "$(registry)/"* ]] && continue
		local owner=${p%/}
		owner=${owner##*/}
		kubectl_ apply -f - >/dev/null <<-EOF
			apiVersion: pkg.crossplane.io/v1beta1
			kind: ImageConfig
			metadata:
			  name: e2e-local-registry-${i}
			spec:
			  matchImages:
			  - type: Prefix
			    prefix: ${p}
			  rewriteImage:
			    prefix: $(registry)/${owner}/
		EOF
		i=$((i + 1))
	done
}

# ---------------------------------------------------------------------------------------------
# package objects

# pkgres KIND (function, provider, configuration, or one of them + revision) prints the fully
# qualified resource: a provider's CRDs may list the category "provider" (ours do), and kubectl
# then reads `get provider NAME` as that category, failing with "you must specify only one
# resource".
pkgres() { echo "${1}s.pkg.crossplane.io"; }

condition() { # KIND NAME TYPE prints the status of condition TYPE
	kubectl_ get "$(pkgres "$1")" "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status}" 2>/dev/null
}

healthy_and_installed() {
	[[ "$(condition "$1" "$2" Healthy)" == True && "$(condition "$1" "$2" Installed)" == True ]]
}

# current_and_healthy KIND NAME REVISION: REVISION is the package's current one, and it is
# Healthy and Installed (a package pushed again under the same tag is only done once core has
# switched to the new revision).
current_and_healthy() {
	[[ "$(kubectl_ get "$(pkgres "$1")" "$2" -o jsonpath='{.status.currentRevision}')" == "$3" ]] &&
		healthy_and_installed "$1" "$2"
}

# describe_package KIND NAME shows why a package is not ready: its conditions and recent events.
describe_package() {
	local kind=$1 name=$2 rev
	kubectl_ get "$(pkgres "${kind}")" "${name}" -o \
		jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' || true
	rev=$(kubectl_ get "$(pkgres "${kind}")" "${name}" -o jsonpath='{.status.currentRevision}' 2>/dev/null || true)
	if [[ -n "${rev}" ]]; then
		echo "revision ${rev}:"
		kubectl_ get "$(pkgres "${kind}revision")" "${rev}" -o \
			jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' || true
	fi
	kubectl_ get events -A --field-selector "involvedObject.name=${rev:-${name}}" 2>/dev/null | tail -n 10 || true
}

# revisions KIND NAME prints the names of the package's revisions.
revisions() {
	kubectl_ get "$(pkgres "$1revision")" -l "pkg.crossplane.io/package=$2" -o name 2>/dev/null | sed 's|.*/||'
}

# new_current_and_healthy KIND NAME OLD_REVISIONS: the package's current revision is one that
# did not exist before (OLD_REVISIONS, space separated), and it is Healthy and Installed. What
# to wait for after pushing new content under the same tag: until core notices, the current
# revision is the old one, and Healthy.
new_current_and_healthy() {
	local current
	current=$(kubectl_ get "$(pkgres "$1")" "$2" -o jsonpath='{.status.currentRevision}') || return 1
	[[ -n "${current}" && " $3 " != *" ${current} "* ]] && healthy_and_installed "$1" "$2"
}

# wait_installed KIND NAME DIGEST OLD_DIGEST OLD_REVISIONS waits until the package runs DIGEST:
# a new revision when the content changed, else the current one, Healthy and Installed.
wait_installed() {
	local kind=$1 name=$2 digest=$3 old_digest=$4 old_revisions=$5
	ON_TIMEOUT="describe_package ${kind} ${name}"
	if [[ -n "${old_revisions}" && "${digest}" != "${old_digest}" ]]; then
		wait_for "${kind^} ${name} Healthy and Installed with a new revision (${digest})" \
			new_current_and_healthy "${kind}" "${name}" "${old_revisions}"
	else
		wait_for "${kind^} ${name} Healthy and Installed" healthy_and_installed "${kind}" "${name}"
	fi
	ON_TIMEOUT=
}

# recorded_digest RECORD prints the digest an install-* recorded (empty when none).
recorded_digest() { sed -n 's/^DIGEST=//p' "$1" 2>/dev/null || true; }

# apply_package KIND NAME SOURCE DIGEST [EXTRA SPEC YAML] applies a package object. The digest
# annotation makes core reconcile (and re-resolve the tag) when only the pushed content changed.
# Server-side and forced: the object may have been created by core's dependency resolver (a
# Configuration installed first), and we take its fields over.
apply_package() {
	local kind=$1 name=$2 source=$3 digest=$4 extra=${5:-}
	kubectl_ apply --server-side --force-conflicts --field-manager=e2e.sh -f - >/dev/null <<-EOF
		apiVersion: pkg.crossplane.io/v1
		kind: ${kind}
		metadata:
		  name: ${name}
		  annotations:
		    e2e.stackservices.io/pushed-digest: "${digest}"
		spec:
		  package: ${source}
		  packagePullPolicy: IfNotPresent
		${extra}
	EOF
}

# dns_label REPOSITORY is the object name Crossplane's dependency resolver gives a package of
# that repository (xpkg.ToDNSLabel: lower case, "/" and "." to "-").
dns_label() {
	local l=${1,,}
	l=${l//[\/.:]/-}
	echo "${l//[^a-z0-9-]/}"
}

# ---------------------------------------------------------------------------------------------
# runtimes

# start_rbac_manager runs `crossplane rbac start` as a Deployment, from an image of the core
# binary, under a ServiceAccount bound to cluster-admin (what Crossplane's chart gives it: it
# grants every package's roles). In a Pod it has a network of its own: on the host its fixed
# metrics port (:8080) is taken.
start_rbac_manager() {
	local image=${RBAC_MANAGER_IMAGE}:${CORE_DIR##*/} tar=${STATE}/rbac-manager-image.tar
	"${TOOLS_BIN}/runtime-image" -binary "${CORE_DIR}/crossplane" -entrypoint /usr/local/bin/crossplane \
		-tag "${image}" -out "${tar}" >/dev/null || die "cannot build the RBAC manager's image"
	node_sh import "${tar}"
	kubectl_ apply -f - >/dev/null <<-EOF
		apiVersion: v1
		kind: ServiceAccount
		metadata:
		  name: rbac-manager
		  namespace: ${CROSSPLANE_NAMESPACE}
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata:
		  name: crossplane-rbac-manager
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
		subjects:
		- {kind: ServiceAccount, name: rbac-manager, namespace: ${CROSSPLANE_NAMESPACE}}
		---
		apiVersion: apps/v1
		kind: Deployment
		metadata:
		  name: crossplane-rbac-manager
		  namespace: ${CROSSPLANE_NAMESPACE}
		spec:
		  replicas: 1
		  selector: {matchLabels: {app: crossplane-rbac-manager}}
		  template:
		    metadata: {labels: {app: crossplane-rbac-manager}}
		    spec:
		      serviceAccountName: rbac-manager
		      containers:
		      - name: rbac-manager
		        image: ${image}
		        imagePullPolicy: Never
		        args: [rbac, start]
		        env:
		        - {name: POD_NAMESPACE, value: ${CROSSPLANE_NAMESPACE}}
	EOF
	ON_TIMEOUT="kubectl_ -n ${CROSSPLANE_NAMESPACE} describe pods -l app=crossplane-rbac-manager"
	wait_for "the RBAC manager's Pod Ready" kubectl_ -n "${CROSSPLANE_NAMESPACE}" rollout status \
		deployment/crossplane-rbac-manager --timeout=1s
	ON_TIMEOUT=
}

# configure_provider_runtime applies examples/provider/runtime.yaml (the ServiceAccount, the
# DeploymentRuntimeConfig, the etcd releases' checksums ConfigMap and the ClusterRole) with
# what this test bed fills in, as the README tells a platform team to: the checksums of the test
# bed's mirror, the host's network (see the header), the ports, the poll interval and the range
# the provider reaches the servers from.
configure_provider_runtime() {
	local sums
	sums="$("${REPO_ROOT}/cluster/tools.sh" path etcd-release)/SHA256SUMS"
	[[ -f "${sums}" ]] || die "no ${sums}: bring the test bed up first (cluster/openstack.sh up)"
	kubectl_ apply -f "${PROVIDER_RUNTIME}" >/dev/null
	kubectl_ -n "${CROSSPLANE_NAMESPACE}" create configmap provider-stackservices-etcd-releases \
		--from-file=SHA256SUMS="${sums}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	local args=(--poll="${E2E_PROVIDER_POLL}" --leader-election --etcd-provider-cidr=198.18.0.0/15
		--etcd-release-checksums=/etc/etcd-releases/SHA256SUMS
		--metrics-bind-address="127.0.0.1:${PROVIDER_METRICS_PORT}"
		--health-probe-bind-address="127.0.0.1:${PROVIDER_HEALTH_PORT}" --debug) json a
	json=$(printf '"%s",' "${args[@]}")
	kubectl_ patch deploymentruntimeconfigs.pkg.crossplane.io "${PROVIDER_RUNTIME_CONFIG}" --type=json -p "[
		{\"op\": \"add\", \"path\": \"/spec/deploymentTemplate/spec/template/spec/hostNetwork\", \"value\": true},
		{\"op\": \"add\", \"path\": \"/spec/deploymentTemplate/spec/template/spec/dnsPolicy\", \"value\": \"ClusterFirstWithHostNet\"},
		{\"op\": \"replace\", \"path\": \"/spec/deploymentTemplate/spec/template/spec/containers/0/args\", \"value\": [${json%,}]}
	]" >/dev/null
}

# pod_logs SELECTOR FILE saves the logs of the Pods of SELECTOR in crossplane-system to FILE.
pod_logs() {
	kubectl_ -n "${CROSSPLANE_NAMESPACE}" logs -l "$1" --tail=-1 --prefix >"$2" 2>&1 || true
}

# ---------------------------------------------------------------------------------------------
# env file

write_env() {
	local tmp=${ENV_FILE}.tmp var
	{
		echo "# written by cluster/e2e.sh: set -a; source <this file>; set +a (values need no quoting)"
		echo "KUBECONFIG=${KUBECONFIG}"
		echo "E2E_REGISTRY=$(registry)"
		echo "E2E_RUN_DIR=${STATE}"
		echo "E2E_KUBECTL=${KUBE_BIN}/kubectl"
		echo "E2E_CROSSPLANE_CLI=${CLI}"
		echo "E2E_CROSSPLANE_CORE=${CORE_DIR}/crossplane"
		echo "E2E_CROSSPLANE_NAMESPACE=${CROSSPLANE_NAMESPACE}"
		echo "E2E_FUNCTION_PAT_NAME=${FUNCTION_PAT_NAME}"
		echo "E2E_FUNCTION_PAT_PACKAGE=${E2E_FUNCTION_PAT_SOURCE}:${FUNCTION_PAT_VERSION}"
		echo "E2E_PROVIDER_NAME=${PROVIDER_NAME}"
		echo "E2E_PROVIDER_SOURCE=${E2E_PROVIDER_SOURCE}"
		echo "E2E_CONFIGURATION_NAME=${CONFIGURATION_NAME}"
		echo "E2E_CONFIGURATION_SOURCE=${E2E_CONFIGURATION_SOURCE}"
		for var in "${PORT_VARS[@]}"; do echo "E2E_${var}=${!var}"; done
	} >"${tmp}"
	mv -f "${tmp}" "${ENV_FILE}"
}

# ---------------------------------------------------------------------------------------------
# commands

# lock serialises every command that changes state on fd 7 (held until this script exits).
lock() {
	mkdir -p "${STATE}"
	exec 7>"${STATE}/.lock"
	flock -w "${E2E_TIMEOUT}" 7 || die "another e2e.sh has held ${STATE}/.lock for ${E2E_TIMEOUT}s"
}

core_init() {
	local attempt out
	for ((attempt = 1; attempt <= 10; attempt++)); do
		# Environment, not flags, as the Helm chart does: v2.4.0 misparses --crds-path, and kong
		# spells the CA flag --tlsca-secret-name. The TLS Secret names are required (else
		# `cannot get TLS secret: : resource name may not be empty`); init fills them with the
		# CA every runtime's certificates are signed by, and core's client certificate.
		if out=$(CRDS_PATH="${CORE_DIR}/crds" TLS_CA_SECRET_NAME=crossplane-root-ca \
			TLS_CLIENT_SECRET_NAME=crossplane-tls-client \
			"${CORE_DIR}/crossplane" core init --enable-webhooks=false \
			--namespace="${CROSSPLANE_NAMESPACE}" </dev/null 2>&1 7>&-); then
			printf '%s\n' "${out}" >>"${LOGS}/core-init.log"
			return 0
		fi
		printf '%s\n' "${out}" >>"${LOGS}/core-init.log"
		# The first run on a fresh cluster fails with `no matches for kind "Lock"`: the Lock
		# CRD it has just applied is not served yet. Other errors do not go away by retrying.
		[[ "${out}" == *"no matches for kind"* ]] || break
		sleep 1
	done
	tail -n 20 "${LOGS}/core-init.log" >&2
	die "crossplane core init failed (log: ${LOGS}/core-init.log)"
}

# core_client_certs writes the client certificate core init made (Secret crossplane-tls-client,
# signed by crossplane-root-ca like every runtime's server certificate) where core start reads it.
core_client_certs() {
	local dir=${STATE}/pki/core-client key
	mkdir -p "${dir}"
	chmod 700 "${STATE}/pki"
	for key in ca.crt tls.crt tls.key; do
		kubectl_ -n "${CROSSPLANE_NAMESPACE}" get secret crossplane-tls-client \
			-o jsonpath="{.data.${key//./\\.}}" | base64 -d >"${dir}/${key}"
		[[ -s "${dir}/${key}" ]] || die "Secret crossplane-tls-client has no ${key}"
	done
}

start_core() {
	daemon_running crossplane && return 0
	kubectl_ create namespace "${CROSSPLANE_NAMESPACE}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	# The Deployment runtime reads core's own ServiceAccount (the chart makes it).
	kubectl_ -n "${CROSSPLANE_NAMESPACE}" create serviceaccount crossplane --dry-run=client -o yaml |
		kubectl_ apply -f - >/dev/null
	log "crossplane core init"
	core_init
	core_client_certs
	# Before core starts, so its first pulls already go to the local registry.
	image_config
	mkdir -p "${STATE}/cache/xpkg" "${STATE}/cache/xfn"
	local debug=()
	[[ -n "${E2E_DEBUG}" ]] && debug=(--debug)
	# In the node's mount namespace, for its hosts file (see the header). Core binds its metrics
	# and probe ports on all addresses (":<port>"; v2.4.0 has no host flag); webhooks are off,
	# the port is set anyway so nothing can claim :9443 by default.
	DAEMON_MATCH="${CORE_DIR}/crossplane" daemon_start crossplane "$(daemon_log crossplane)" \
		nsenter -t "$(node_sh pid)" -m -- "${CORE_DIR}/crossplane" "${debug[@]}" core start \
		--namespace="${CROSSPLANE_NAMESPACE}" \
		--package-runtime=Deployment \
		--enable-webhooks=false \
		--tls-client-certs-dir="${STATE}/pki/core-client" \
		--xpkg-cache-dir="${STATE}/cache/xpkg" \
		--xfn-cache-dir="${STATE}/cache/xfn" \
		--metrics-port="${CORE_METRICS_PORT}" \
		--health-probe-port="${CORE_HEALTH_PORT}" \
		--webhook-port="${CORE_WEBHOOK_PORT}"
	wait_for "crossplane core /readyz" http_ok "http://127.0.0.1:${CORE_HEALTH_PORT}/readyz"
}

# ensure_function_pushed pushes function-patch-and-transform unless the registry has it.
ensure_function_pushed() {
	function_pat_xpkg
	[[ -n "$(pushed_digest "${FUNCTION_PAT_REPOSITORY}" "${FUNCTION_PAT_VERSION}")" ]] && return 0
	push "${FN_XPKG}" "${FUNCTION_PAT_REPOSITORY}" "${FUNCTION_PAT_VERSION}"
	REPUSHED=true
	log "pushed $(registry)/${FUNCTION_PAT_REPOSITORY}:${FUNCTION_PAT_VERSION}"
}

# installed_each FN calls FN KIND NAME REPOSITORY TAG XPKG RECORD for every package install-*
# recorded (in the file RECORD).
installed_each() {
	local f
	for f in "${INSTALLED}"/*.env; do
		[[ -f "${f}" ]] || continue
		local KIND='' REPOSITORY='' TAG='' XPKG='' NAME=''
		# shellcheck source=/dev/null
		source "${f}"
		"$1" "${KIND}" "${NAME}" "${REPOSITORY}" "${TAG}" "${XPKG}" "${f}"
	done
}

# prune (for installed_each) forgets a recorded package whose object was deleted meanwhile.
prune() {
	local out
	# Kept on any error: only a definite "not found" (empty output) forgets.
	out=$(kubectl_ get "$(pkgres "$1")" "$2" --ignore-not-found -o name 2>/dev/null) || return 0
	[[ -n "${out}" ]] && return 0
	log "${1} ${2} no longer exists; forgetting it"
	rm -f "$6"
}

# repush (for installed_each) pushes a recorded package again unless the registry has it: the
# registry is in memory, and the package objects in etcd still name it. Done before core starts,
# so that core never sees the registry without them.
repush() {
	local repo=$3 tag=$4 xpkg=$5
	[[ -n "$(pushed_digest "${repo}" "${tag}")" ]] && return 0
	[[ -f "${xpkg}" ]] || die "${xpkg} is gone (recorded in ${INSTALLED}); run down --purge"
	push "${xpkg}" "${repo}" "${tag}"
	log "re-pushed $(registry)/${repo}:${tag}"
	REPUSHED=true
}

REPUSHED=false

# restart (for installed_each) brings what the runtimes need back after a down (the provider's
# runtime config names ports that may have changed; core resolves the function's Service
# through the hosts file) and, when core may have seen the registry without their packages,
# makes it reconcile them right away (any change of the object queues it) instead of after its
# error backoff.
restart() {
	local kind=$1 name=$2
	case "${kind}" in
	provider) configure_provider_runtime ;;
	esac
	if ${REPUSHED}; then
		kubectl_ annotate --overwrite "$(pkgres "${kind}")" "${name}" \
			"e2e.stackservices.io/restored-at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
	fi
}

# healthy_again (for installed_each) waits until a restored package is Healthy and Installed.
healthy_again() {
	ON_TIMEOUT="describe_package $1 $2"
	wait_for "${1^} $2 Healthy again" healthy_and_installed "$1" "$2"
	ON_TIMEOUT=
	case "$1" in
	provider) wait_for "the provider's /readyz" provider_ready ;;
	esac
}

# resolvable NAME: core's hosts file (see cluster/node.sh) names NAME.
resolvable() { grep -q " $1 " "${STATE}/node/etc/hosts"; }

provider_ready() { http_ok "http://127.0.0.1:${PROVIDER_HEALTH_PORT}/readyz"; }

cmd_up() {
	local t0=${SECONDS}
	lock
	mkdir -p "${LOGS}" "${INSTALLED}"
	daemon_forget_dead "${DAEMONS[@]}"
	resolve_tools
	# Our own cluster: its state is $STATE/kube and $STATE/node, apart from any other RUN_DIR.
	node_sh up
	load_ports

	daemon_start registry "$(daemon_log registry)" "${TOOLS_BIN}/registry" \
		-addr="127.0.0.1:${REGISTRY_PORT}" -addr-file="${STATE}/registry.addr"
	wait_for "the registry on $(registry)" http_ok "http://$(registry)/v2/"

	# Packages first: the package objects in etcd name them (after a down, the registry is new).
	REPUSHED=false
	ensure_function_pushed
	installed_each prune
	installed_each repush
	start_core
	start_rbac_manager
	# Again when core was running already: the registry port may have changed.
	image_config
	installed_each restart
	installed_each healthy_again
	write_env
	log "up in $((SECONDS - t0))s: registry $(registry), core /readyz on 127.0.0.1:${CORE_HEALTH_PORT}; env: ${ENV_FILE}"
}

# require_up loads what install-* needs and fails unless `up` has run.
require_up() {
	if ! daemon_running registry || ! daemon_running crossplane; then
		die "not up: run cluster/e2e.sh up first"
	fi
	daemon_forget_dead "${DAEMONS[@]}"
	resolve_tools_quietly
	load_ports
	write_env
	mkdir -p "${INSTALLED}"
}

# record FILE KIND NAME REPOSITORY TAG XPKG DIGEST writes what an install-* did, for `up` to
# replay.
record() {
	cat >"$1" <<-EOF
		KIND=$2
		NAME=$3
		REPOSITORY=$4
		TAG=$5
		XPKG=$6
		DIGEST=$7
	EOF
}

cmd_install_function() {
	lock
	require_up
	ensure_function_pushed
	local source=${E2E_FUNCTION_PAT_SOURCE}:${FUNCTION_PAT_VERSION} digest before record t0=${SECONDS}
	record=${INSTALLED}/function-pat.env
	digest=$(pushed_digest "${FUNCTION_PAT_REPOSITORY}" "${FUNCTION_PAT_VERSION}")
	before=$(revisions function "${FUNCTION_PAT_NAME}" | tr '\n' ' ')
	apply_package Function "${FUNCTION_PAT_NAME}" "${source}" "${digest}"
	wait_installed function "${FUNCTION_PAT_NAME}" "${digest}" "$(recorded_digest "${record}")" "${before}"
	record "${record}" function "${FUNCTION_PAT_NAME}" "${FUNCTION_PAT_REPOSITORY}" \
		"${FUNCTION_PAT_VERSION}" "${FN_XPKG}" "${digest}"
	ON_TIMEOUT="tail -n 5 ${STATE}/node/logs/dns.log"
	wait_for "the function's Service resolvable by core" resolvable \
		"${FUNCTION_PAT_NAME}.${CROSSPLANE_NAMESPACE}"
	ON_TIMEOUT=
	log "Function ${FUNCTION_PAT_NAME} healthy in $((SECONDS - t0))s (${source}, a Pod on the node)"
}

# mrds_active: every MRD of the provider is Active and its CRD Established (provider's group
# suffix stackservices.io).
mrds_active() {
	local states names n
	states=$(kubectl_ get managedresourcedefinitions -o \
		jsonpath='{range .items[*]}{.metadata.name} {.spec.state}{"\n"}{end}' | grep 'stackservices\.io ') || return 1
	[[ -n "${states}" ]] || return 1
	grep -qv ' Active$' <<<"${states}" && return 1
	names=$(awk '{print "crd/" $1}' <<<"${states}")
	# shellcheck disable=SC2086 # one argument per CRD
	n=$(kubectl_ get ${names} -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Established")].status}{"\n"}{end}' | grep -c '^True$')
	[[ "${n}" == "$(wc -l <<<"${states}")" ]]
}

cmd_install_provider() {
	[[ $# -eq 1 ]] || usage
	local xpkg=$1
	[[ -f "${xpkg}" ]] || die "${xpkg}: no such package file"
	xpkg=$(realpath "${xpkg}")
	lock
	require_up
	local tag digest before record=${INSTALLED}/provider.env t0=${SECONDS}
	tag=$(tag_of "${xpkg}")
	# A copy: the restore of the next `up` must push the very package the revision was made from.
	mkdir -p "${STATE}/packages"
	cp -f "${xpkg}" "${STATE}/packages/provider.xpkg"
	push "${STATE}/packages/provider.xpkg" "${PROVIDER_REPOSITORY}" "${tag}"
	digest=$(pushed_digest "${PROVIDER_REPOSITORY}" "${tag}")
	log "pushed $(registry)/${PROVIDER_REPOSITORY}:${tag} (${digest})"
	# What a platform team applies next to the Provider (examples/provider): the runtime config
	# and what it names, and the activation policy (safe-start: the managed resources stay
	# inactive MRDs, with no CRD, and the runtime scaled to zero, until a policy activates them).
	configure_provider_runtime
	kubectl_ apply -f "${REPO_ROOT}/examples/provider/activation.yaml" >/dev/null
	before=$(revisions provider "${PROVIDER_NAME}" | tr '\n' ' ')
	apply_package Provider "${PROVIDER_NAME}" "${E2E_PROVIDER_SOURCE}:${tag}" "${digest}" "  runtimeConfigRef:
    apiVersion: pkg.crossplane.io/v1beta1
    kind: DeploymentRuntimeConfig
    name: ${PROVIDER_RUNTIME_CONFIG}"
	wait_installed provider "${PROVIDER_NAME}" "${digest}" "$(recorded_digest "${record}")" "${before}"
	record "${record}" provider "${PROVIDER_NAME}" "${PROVIDER_REPOSITORY}" "${tag}" \
		"${STATE}/packages/provider.xpkg" "${digest}"
	ON_TIMEOUT="kubectl_ get managedresourcedefinitions"
	wait_for "the provider's managed resources Active and their CRDs Established" mrds_active
	ON_TIMEOUT="kubectl_ -n ${CROSSPLANE_NAMESPACE} describe pods"
	wait_for "the provider's /readyz (its Pod on the host's network)" provider_ready
	ON_TIMEOUT=
	log "Provider ${PROVIDER_NAME} healthy and its Pod ready in $((SECONDS - t0))s"
}

cmd_install_configuration() {
	[[ $# -eq 1 || $# -eq 2 ]] || usage
	local xpkg=$1 repo=${2:-${CONFIGURATION_REPOSITORY}}
	[[ -f "${xpkg}" ]] || die "${xpkg}: no such package file"
	[[ "${repo}" =~ ^[a-z0-9-]+/[a-z0-9-]+$ ]] || die "repository ${repo}: expected <owner>/<name>"
	xpkg=$(realpath "${xpkg}")
	lock
	require_up
	# The source: E2E_CONFIGURATION_SOURCE for the product's configuration, else the same host.
	local name source tag digest before record t0=${SECONDS}
	name=$(dns_label "${repo}")
	record=${INSTALLED}/configuration-${name}.env
	source=${E2E_CONFIGURATION_SOURCE}
	[[ "${repo}" == "${CONFIGURATION_REPOSITORY}" ]] || source=${E2E_CONFIGURATION_SOURCE%%/*}/${repo}
	tag=$(tag_of "${xpkg}")
	mkdir -p "${STATE}/packages"
	cp -f "${xpkg}" "${STATE}/packages/${name}.xpkg"
	push "${STATE}/packages/${name}.xpkg" "${repo}" "${tag}"
	digest=$(pushed_digest "${repo}" "${tag}")
	log "pushed $(registry)/${repo}:${tag} (${digest})"
	local extra=''
	# E2E_SKIP_DEPENDENCY_RESOLUTION=true: install-function/-provider installed them already.
	[[ "${E2E_SKIP_DEPENDENCY_RESOLUTION:-}" == true ]] && extra='  skipDependencyResolution: true'
	before=$(revisions configuration "${name}" | tr '\n' ' ')
	apply_package Configuration "${name}" "${source}:${tag}" "${digest}" "${extra}"
	wait_installed configuration "${name}" "${digest}" "$(recorded_digest "${record}")" "${before}"
	record "${record}" configuration "${name}" "${repo}" "${tag}" "${STATE}/packages/${name}.xpkg" "${digest}"
	# The package is Healthy once its objects exist; claims can be applied only once the XRDs
	# are Established (the XR CRD served) and Offered (the claim CRD served): 2-6 s more.
	ON_TIMEOUT="kubectl_ get compositeresourcedefinitions"
	wait_for "the XRDs Established (and Offered, with claims)" xrds_ready
	ON_TIMEOUT=
	log "Configuration ${name} healthy, XRDs ready in $((SECONDS - t0))s (${source}:${tag})"
}

# xrds_ready: every XRD is Established, and Offered when it has claimNames.
xrds_ready() {
	local out name claim est off
	out=$(kubectl_ get compositeresourcedefinitions -o jsonpath='{range .items[*]}{.metadata.name}|{.spec.claimNames.kind}|{.status.conditions[?(@.type=="Established")].status}|{.status.conditions[?(@.type=="Offered")].status}{"\n"}{end}') ||
		return 1
	while IFS='|' read -r name claim est off; do
		[[ -n "${name}" ]] || continue
		[[ "${est}" == True ]] || return 1
		[[ -z "${claim}" || "${off}" == True ]] || return 1
	done <<<"${out}"
}

# now_ms prints a monotonic-enough wall clock in milliseconds, for the timings smoke reports.
now_ms() { date +%s%3N; }

# composed NAMESPACE LABEL=VALUE: a SecurityGroup with that label exists in NAMESPACE.
composed() {
	[[ -n "$(kubectl_ -n "$1" get securitygroups.network.m.stackservices.io -l "$2" -o name)" ]]
}

no_composed() { ! composed "$@"; }

cmd_smoke() {
	local dir=${REPO_ROOT}/cluster/e2e/smoke ns=e2e-smoke repo=stackservices/configuration-e2e-smoke
	require_up
	local k kind name
	for k in function:${FUNCTION_PAT_NAME} provider:${PROVIDER_NAME}; do
		kind=${k%%:*} name=${k#*:}
		kubectl_ get "$(pkgres "${kind}")" "${name}" >/dev/null 2>&1 ||
			die "${kind} ${name} is not installed: run install-function and install-provider first"
		# Core re-evaluates a package's health as its runtime changes: a Provider reported
		# Healthy a moment ago was once read not Healthy here, the next second, in CI.
		WAIT_TIMEOUT=60 wait_for "${kind^} ${name} Healthy and Installed" healthy_and_installed "${kind}" "${name}"
	done
	# The package: the meta with our upstream names, and the XRDs and Compositions.
	local root=${STATE}/smoke/root xpkg=${STATE}/smoke/configuration-e2e-smoke-v0.0.1.xpkg
	rm -rf "${root}"
	mkdir -p "${root}"
	cp "${dir}"/package/*.yaml "${root}/"
	sed -e "s|@PROVIDER_SOURCE@|${E2E_PROVIDER_SOURCE}|" -e "s|@FUNCTION_SOURCE@|${E2E_FUNCTION_PAT_SOURCE}|" \
		"${dir}/crossplane.yaml.in" >"${root}/crossplane.yaml"
	rm -f "${xpkg}"
	"${CLI}" xpkg build --package-root="${root}" --examples-root="${root}/no-examples" \
		--package-file="${xpkg}" >>"${LOGS}/push.log" 2>&1 || {
		tail -n 20 "${LOGS}/push.log" >&2
		die "cannot build the smoke configuration"
	}
	cmd_install_configuration "${xpkg}" "${repo}"

	log "smoke: applying a claim and a namespaced XR in ${ns}"
	local t0 t1 t2
	t0=$(now_ms)
	kubectl_ apply -f "${dir}/objects.yaml" >/dev/null
	ON_TIMEOUT="kubectl_ -n ${ns} get smokefirewalls,smokegroups -o wide"
	wait_for "a SecurityGroup composed for the claim" composed "${ns}" crossplane.io/claim-name=legacy
	t1=$(now_ms)
	wait_for "a SecurityGroup composed for the XR" composed "${ns}" crossplane.io/composite=namespaced
	t2=$(now_ms)
	log "smoke: claim -> SecurityGroup in $((t1 - t0)) ms, XR -> SecurityGroup in $((t2 - t0)) ms"
	local cidrs
	cidrs=$(kubectl_ -n "${ns}" get securitygroups.network.m.stackservices.io \
		-o jsonpath='{range .items[*]}{.spec.forProvider.rules[0].remoteIPPrefix}{"\n"}{end}' | sort | tr '\n' ' ')
	[[ "${cidrs}" == "10.0.0.0/8 192.168.0.0/16 " ]] ||
		die "smoke: the composed SecurityGroups carry ${cidrs:-nothing}, not the patched 10.0.0.0/8 and 192.168.0.0/16"
	kubectl_ -n "${ns}" get securitygroups.network.m.stackservices.io >&2

	t0=$(now_ms)
	kubectl_ -n "${ns}" delete smokefirewalls.smoke.e2e.stackservices.io legacy --wait=false >/dev/null
	kubectl_ -n "${ns}" delete smokegroups.smoke.e2e.stackservices.io namespaced --wait=false >/dev/null
	ON_TIMEOUT="kubectl_ -n ${ns} get securitygroups.network.m.stackservices.io -o yaml"
	wait_for "the composed SecurityGroups garbage collected" no_composed "${ns}" crossplane.io/composite
	t1=$(now_ms)
	ON_TIMEOUT=
	log "smoke: claim and XR deleted -> SecurityGroups gone in $((t1 - t0)) ms"

	# Leave the cluster as the product's e2e expects it: no smoke package, no smoke namespace.
	local name
	name=$(dns_label "${repo}")
	lock
	kubectl_ delete "$(pkgres configuration)" "${name}" --wait=false >/dev/null
	kubectl_ delete namespace "${ns}" --wait=false >/dev/null
	rm -f "${INSTALLED}/configuration-${name}.env" "${STATE}/packages/${name}.xpkg"
	# Waited for, so that smoke can run again right away (an object being deleted cannot be
	# applied again).
	wait_for "the smoke package and namespace deleted" gone "$(pkgres configuration)/${name}" "namespace/${ns}"
	log "smoke: passed"
}

# gone RESOURCE/NAME...: none of them exists any more.
gone() { [[ -z "$(kubectl_ get "$@" --ignore-not-found -o name)" ]]; }

cmd_down() {
	local purge=false
	case "${1:-}" in
	"") ;;
	--purge) purge=true ;;
	*) usage ;;
	esac
	if [[ -d "${STATE}" ]]; then
		lock
		mkdir -p "${LOGS}"
		resolve_tools_quietly
		if node_sh status >/dev/null 2>&1; then
			# Kept for a look after a failed run: the Pods' logs go with the node.
			pod_logs "pkg.crossplane.io/provider=${PROVIDER_NAME}" "${LOGS}/provider.log"
			pod_logs "pkg.crossplane.io/function=${FUNCTION_PAT_NAME}" "${LOGS}/function-pat.log"
		fi
		local i
		for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
			daemon_stop "${DAEMONS[i]}"
		done
		node_sh down
	fi
	if ${purge}; then
		[[ -d "${STATE}" ]] && node_sh down --purge
		rm -rf "${STATE}"
		log "purged ${STATE}"
	fi
}

cmd_status() {
	local rc=0
	daemon_status "${DAEMONS[@]}" || rc=3
	if [[ -f "${PORTS_FILE}" ]]; then
		sed 's/=/ /' "${PORTS_FILE}" | while read -r var port; do printf '%-24s %s\n' "${var}" "${port}"; done
	fi
	node_sh status | sed 's/^/node: /' || rc=3
	if ((rc == 0)); then
		resolve_tools_quietly
		kubectl_ get pkg 2>/dev/null || true
		kubectl_ -n "${CROSSPLANE_NAMESPACE}" get pods -o wide 2>/dev/null || true
	fi
	[[ -f "${ENV_FILE}" ]] && printf '%-24s %s\n' env "${ENV_FILE}"
	return "${rc}"
}

cmd_env() {
	[[ -f "${ENV_FILE}" ]] || die "no ${ENV_FILE}: run cluster/e2e.sh up first"
	echo "${ENV_FILE}"
}

main() {
	[[ $# -gt 0 ]] || usage
	local cmd=$1
	shift
	case "${cmd}" in
	up | status | env | install-function | smoke) [[ $# -eq 0 ]] || usage ;;
	esac
	case "${cmd}" in
	up) cmd_up ;;
	down) cmd_down "$@" ;;
	status) cmd_status ;;
	env) cmd_env ;;
	install-function) cmd_install_function ;;
	install-provider) cmd_install_provider "$@" ;;
	install-configuration) cmd_install_configuration "$@" ;;
	smoke) cmd_smoke ;;
	*) usage ;;
	esac
}

main "$@"
