#!/usr/bin/env bash
# cluster/e2e.sh: a real Crossplane for the end-to-end tests, as local processes on 127.0.0.1.
#
# Usage:
#   cluster/e2e.sh up                      own control plane (kube.sh with RUN_DIR=$RUN_DIR/e2e),
#                                          in-memory OCI registry, Crossplane core; the
#                                          function-patch-and-transform package pushed (idempotent)
#   cluster/e2e.sh down [--purge]          stop all of it (TERM, then KILL); --purge deletes state
#   cluster/e2e.sh status                  what runs where; exit 0 only when everything of `up` runs
#   cluster/e2e.sh env                     print the path of the env file (KUBECONFIG, E2E_REGISTRY,
#                                          ports, package names) for tests to source
#   cluster/e2e.sh install-function        Function function-patch-and-transform Healthy, its
#                                          process serving mTLS on a free port
#   cluster/e2e.sh install-provider XPKG BINARY
#                                          push XPKG, Provider Healthy, its managed resources
#                                          activated, BINARY running against the e2e cluster
#   cluster/e2e.sh install-configuration XPKG [OWNER/NAME]
#                                          push XPKG (as stackservices/configuration-stackservices
#                                          unless named), Configuration Healthy, its XRDs ready
#   cluster/e2e.sh smoke                   self-test after install-function and install-provider:
#                                          a trivial Configuration (cluster/e2e/smoke) composes
#                                          a SecurityGroup for a claim and for a namespaced XR
#
# Why it looks like this (no Docker, no kubelet here): core runs with --package-runtime=External,
# so the package manager installs packages (CRDs, MRDs, XRDs, Compositions) from real .xpkg files
# pulled from the registry, while the runtimes (function and provider processes) are ours: we
# start them and tell Crossplane about them the way its Deployment runtime would, by patching the
# revision status (endpoint, tlsServerSecretName, RuntimeHealthy=True). Core calls functions over
# mutual TLS only, so `up` makes a CA, core's client certificate and a server certificate for
# 127.0.0.1 that the functions serve. kube-controller-manager runs for garbage collection (the
# composed resources of a deleted claim).
#
# Package names: packages are pushed to 127.0.0.1:<registry port>/<repository>. The Function,
# Provider and Configuration objects name them by their upstream source (E2E_*_SOURCE, e.g.
# xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform) and an ImageConfig rewrites
# those prefixes to the local registry, so a Configuration's dependsOn can name the real upstream
# packages and still resolve here; dependency resolution is keyed on the original source.
#
# State lives in $RUN_DIR/e2e (RUN_DIR defaults to <repo root>/.run): kube/ (kube.sh), pki/,
# logs/, *.pid, ports.env, e2e.env, cache/ (core's package cache), installed/ (what install-*
# did, replayed by the next `up`: the registry is in memory, and runtimes are processes).
# provider.log is $RUN_DIR/e2e/provider.log.
#
# Environment: RUN_DIR, CACHE_DIR, E2E_TIMEOUT (seconds per wait, default 300), E2E_DEBUG=1
# (core and function debug logs), E2E_PROVIDER_POLL (default 10s), E2E_PROVIDER_SOURCE,
# E2E_CONFIGURATION_SOURCE, E2E_FUNCTION_PAT_SOURCE (upstream package names, without tag),
# E2E_PACKAGE_TAG (tag for install-provider/-configuration; default from the .xpkg file name),
# E2E_LOCAL_MACHINES=1 (the provider may run etcd members as local processes, for make dev).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/members.sh
source "${REPO_ROOT}/cluster/lib/members.sh"
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
CACHE_DIR=${CACHE_DIR:-${REPO_ROOT}/.cache}
export CACHE_DIR
STATE=${RUN_DIR}/e2e
PKI=${STATE}/pki
LOGS=${STATE}/logs
INSTALLED=${STATE}/installed
PORTS_FILE=${STATE}/ports.env
ENV_FILE=${STATE}/e2e.env
# With E2E_LOCAL_MACHINES, the provider runs the members of EtcdClusters of machines.type Local
# as local processes under here, with this etcd.
MACHINES_DIR=${STATE}/machines
E2E_ETCD_VERSION=${E2E_ETCD_VERSION:-v3.6.16}
# Everything we run (kubectl, core, functions, the provider) talks to the e2e control plane only.
export KUBECONFIG=${STATE}/kube/kubeconfig
# Binaries built from the nested tools/ module, cached next to the other tools.
TOOLS_BIN=${CACHE_DIR}/e2e

E2E_TIMEOUT=${E2E_TIMEOUT:-300}
E2E_DEBUG=${E2E_DEBUG:-}
E2E_PROVIDER_POLL=${E2E_PROVIDER_POLL:-10s}
E2E_LOCAL_MACHINES=${E2E_LOCAL_MACHINES:-}

CROSSPLANE_NAMESPACE=crossplane-system
# The Secret named as the revisions' tlsServerSecretName. Core reads its tls.crt while it
# establishes a package with a runtime (for webhook CA bundles) and fails without it; nothing
# serves it, no webhook can reach a local process anyway.
PACKAGE_TLS_SECRET=e2e-package-runtime-tls

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
PORT_VARS=(REGISTRY_PORT CORE_METRICS_PORT CORE_HEALTH_PORT CORE_WEBHOOK_PORT FUNCTION_PAT_PORT
	PROVIDER_METRICS_PORT PROVIDER_HEALTH_PORT)
# Components in start order; `down` stops them in reverse.
COMPONENTS=(registry crossplane function-pat provider)

log() { printf 'e2e.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------------------------------------
# tools

KUBE_BIN='' CORE_DIR='' FN_DIR='' CLI='' ETCD_BINARIES=''
resolve_tools() {
	# Each is a cache hit (a stat) once built; a cold build of all of them takes minutes.
	"${REPO_ROOT}/cluster/tools.sh" kube crossplane-core "function-pat@${FUNCTION_PAT_VERSION}" crossplane-cli \
		"etcd@${E2E_ETCD_VERSION}"
	ETCD_BINARIES=$(dirname "$("${REPO_ROOT}/cluster/tools.sh" path "etcd@${E2E_ETCD_VERSION}")")
	KUBE_BIN=$("${REPO_ROOT}/cluster/tools.sh" path kube)
	CORE_DIR=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-core)
	FN_DIR=$("${REPO_ROOT}/cluster/tools.sh" path "function-pat@${FUNCTION_PAT_VERSION}")
	CLI=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-cli)
	# The registry and the image builder come from the nested tools/ module, which pins
	# go-containerregistry apart from the provider's go.mod. go build relinks only on change.
	local cmd
	for cmd in registry runtime-image; do
		(cd "${REPO_ROOT}/tools" && CGO_ENABLED=0 GOWORK=off go build -trimpath -buildvcs=false \
			-o "${TOOLS_BIN}/${cmd}" "./cmd/${cmd}") || die "cannot build tools/cmd/${cmd}"
	done
}

# resolve_tools_quietly finds the binaries without building anything (for down, status, env).
resolve_tools_quietly() {
	ETCD_BINARIES=$(dirname "$("${REPO_ROOT}/cluster/tools.sh" path "etcd@${E2E_ETCD_VERSION}")")
	KUBE_BIN=$("${REPO_ROOT}/cluster/tools.sh" path kube)
	CORE_DIR=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-core)
	FN_DIR=$("${REPO_ROOT}/cluster/tools.sh" path "function-pat@${FUNCTION_PAT_VERSION}")
	CLI=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-cli)
}

kubectl_() { "${KUBE_BIN}/kubectl" --request-timeout=30s "$@"; }

# ---------------------------------------------------------------------------------------------
# ports (the same scheme as kube.sh: chosen once, reused while free)


port_owner() {
	case "$1" in
	REGISTRY_PORT) echo registry ;;
	CORE_*) echo crossplane ;;
	FUNCTION_PAT_PORT) echo function-pat ;;
	PROVIDER_*) echo provider ;;
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
		if [[ -n "${p}" ]] && { port_free "${p}" || running "$(port_owner "${var}")"; }; then
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

# certs_dir DIR NAME lays out NAME's key pair with the CA the way both core
# (--tls-client-certs-dir) and function-sdk-go (--tls-certs-dir) read it.
certs_dir() {
	local dir=${PKI}/$1 name=$2
	mkdir -p "${dir}"
	cp "${PKI}/ca.crt" "${dir}/ca.crt"
	cp "${PKI}/${name}.crt" "${dir}/tls.crt"
	cp "${PKI}/${name}.key" "${dir}/tls.key"
}

# ensure_pki creates, once, a CA of its own (apart from the control plane's), core's client
# certificate and the functions' server certificate. Core dials 127.0.0.1:<port>, so the server
# certificate must name IP:127.0.0.1.
ensure_pki() {
	[[ -f "${PKI}/done" ]] && return 0
	rm -rf "${PKI}"
	mkdir -p "${PKI}"
	chmod 700 "${PKI}"
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/ca.key" 2>/dev/null
	openssl req -x509 -new -key "${PKI}/ca.key" -subj "/CN=provider-stackservices-e2e-ca" \
		-days 3650 -sha256 -out "${PKI}/ca.crt" -config <(printf '%s\n' \
			'[req]' 'distinguished_name = dn' 'x509_extensions = ca' '[dn]' '[ca]' \
			'basicConstraints = critical,CA:TRUE' \
			'keyUsage = critical,keyCertSign,cRLSign,digitalSignature' \
			'subjectKeyIdentifier = hash')
	local leaf="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
	sign core-client "/CN=crossplane" "${leaf}
extendedKeyUsage=clientAuth"
	sign function-server "/CN=e2e-function" "${leaf}
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
	certs_dir core-client core-client
	certs_dir function-server function-server
	touch "${PKI}/done"
}

# ---------------------------------------------------------------------------------------------
# processes

pid_file() { echo "${STATE}/$1.pid"; }

# running NAME succeeds when NAME's recorded PID is alive and still runs the binary recorded with
# it (a stale PID file after a reboot may name an unrelated process, which we must never signal).
running() {
	local f pid exe argv0=
	f=$(pid_file "$1")
	[[ -f "${f}" ]] || return 1
	read -r pid exe <"${f}" || true
	[[ "${pid}" =~ ^[0-9]+$ && -n "${exe}" ]] || return 1
	[[ -r "/proc/${pid}/cmdline" ]] || return 1
	IFS= read -r -d '' argv0 <"/proc/${pid}/cmdline" 2>/dev/null || true
	[[ "${argv0##*/}" == "${exe}" ]]
}

pid_of() {
	local pid _
	read -r pid _ <"$(pid_file "$1")"
	echo "${pid}"
}

# start NAME LOG BINARY ARGS... launches BINARY in its own session (^C in the calling make does
# not take it down), stdin closed, output appended to LOG, and records its PID. fd 7 is our lock:
# a daemon inheriting it would hold the lock for as long as it runs.
start() {
	local name=$1 logf=$2 bin=$3
	shift 3
	running "${name}" && return 0
	log "starting ${name}"
	setsid "${bin}" "$@" </dev/null >>"${logf}" 2>&1 7>&- &
	local pid=$!
	echo "${pid} ${bin##*/}" >"$(pid_file "${name}")"
	await_exec "${pid}" "${bin##*/}"
}

# stop NAME sends TERM, waits up to 15 s (the provider drains in-flight reconciles), then KILLs.
stop() {
	local name=$1 pid i
	if running "${name}"; then
		pid=$(pid_of "${name}")
		log "stopping ${name} (pid ${pid})"
		kill -TERM "${pid}" 2>/dev/null || true
		for ((i = 0; i < 150; i++)); do
			running "${name}" || break
			sleep 0.1
		done
		if running "${name}"; then
			log "${name} ignored TERM for 15s, killing"
			kill -KILL "${pid}" 2>/dev/null || true
			sleep 0.2
		fi
	fi
	rm -f "$(pid_file "${name}")"
}

log_of() {
	case "$1" in
	provider) echo "${STATE}/provider.log" ;;
	*) echo "${LOGS}/$1.log" ;;
	esac
}

# forget_dead removes the PID files of components that exited since we started them (a crash,
# a reboot), so that they are started again instead of failing every wait with check_alive.
forget_dead() {
	local c
	for c in "${COMPONENTS[@]}"; do
		if [[ -f "$(pid_file "${c}")" ]] && ! running "${c}"; then
			log "${c} had exited (log: $(log_of "${c}"))"
			rm -f "$(pid_file "${c}")"
		fi
	done
}

# check_alive fails, showing the end of its log, when a component we started has died.
check_alive() {
	local c
	for c in "${COMPONENTS[@]}"; do
		if [[ -f "$(pid_file "${c}")" ]] && ! running "${c}"; then
			tail -n 30 "$(log_of "${c}")" >&2 || true
			die "${c} exited (log: $(log_of "${c}"))"
		fi
	done
}

# wait_for WHAT CMD... polls CMD every 0.5 s until it succeeds, for at most E2E_TIMEOUT seconds;
# it fails fast when one of our components died. ON_TIMEOUT, if set, is run before giving up.
ON_TIMEOUT=
wait_for() {
	local what=$1 deadline=$((SECONDS + E2E_TIMEOUT))
	shift
	while ! "$@" >/dev/null 2>&1; do
		check_alive
		if ((SECONDS >= deadline)); then
			if [[ -n "${ON_TIMEOUT}" ]]; then ${ON_TIMEOUT} >&2 || true; fi
			die "timed out after ${E2E_TIMEOUT}s waiting for ${what} (logs: ${LOGS}, ${STATE}/provider.log)"
		fi
		sleep 0.5
	done
}

http_ok() { curl -fsS --max-time 2 -o /dev/null "$1"; }

listening() { ! port_free "$1"; }

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

# revision_name NAME DIGEST GENERATION is the name core gives the package revision of that digest
# and generation (pkg/manager: FriendlyID(name, sha256(hex|generation)[:12])). Waiting for this
# exact revision, not for status.currentRevision, matters when a package is pushed again under
# the same tag: until core notices, currentRevision names the old revision.
revision_name() {
	local hash
	hash=$(printf '%s|%s' "${2#sha256:}" "$3" | sha256sum)
	echo "${1:0:50}-${hash:0:12}"
}

# mark_runtime_healthy KIND NAME [ENDPOINT] does to a package revision's status what core's
# Deployment runtime would: tlsServerSecretName, the function endpoint, and a RuntimeHealthy=True
# condition added to (or replacing its own in) the revision's conditions. A JSON patch with a
# resourceVersion test, so a concurrent status update of core is not overwritten (retried).
mark_runtime_healthy() {
	local kind=$1 name=$2 endpoint=${3:-} attempt
	for ((attempt = 0; attempt < 20; attempt++)); do
		local out rv has_status types idx=-1 i=0 t ops now
		out=$(kubectl_ get "$(pkgres "${kind}")" "${name}" -o \
			jsonpath='{.metadata.resourceVersion}{"\n"}{.status}{"\n"}{range .status.conditions[*]}{.type}{"\n"}{end}') ||
			return 1
		rv=$(sed -n 1p <<<"${out}")
		has_status=$(sed -n 2p <<<"${out}")
		types=$(sed -n '3,$p' <<<"${out}")
		while IFS= read -r t; do
			[[ -z "${t}" ]] && continue
			[[ "${t}" == RuntimeHealthy ]] && idx=${i}
			i=$((i + 1))
		done <<<"${types}"
		now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
		local cond='{"type":"RuntimeHealthy","status":"True","reason":"HealthyPackageRevision","message":"local process started by cluster/e2e.sh","lastTransitionTime":"'${now}'"}'
		ops='[{"op":"test","path":"/metadata/resourceVersion","value":"'${rv}'"}'
		[[ -n "${has_status}" ]] || ops+=',{"op":"add","path":"/status","value":{}}'
		ops+=',{"op":"add","path":"/status/tlsServerSecretName","value":"'${PACKAGE_TLS_SECRET}'"}'
		[[ -n "${endpoint}" ]] && ops+=',{"op":"add","path":"/status/endpoint","value":"'${endpoint}'"}'
		if ((idx >= 0)); then
			ops+=',{"op":"replace","path":"/status/conditions/'${idx}'","value":'${cond}'}'
		elif ((i > 0)); then
			ops+=',{"op":"add","path":"/status/conditions/-","value":'${cond}'}'
		else
			ops+=',{"op":"add","path":"/status/conditions","value":['${cond}']}'
		fi
		ops+=']'
		if kubectl_ patch "$(pkgres "${kind}")" "${name}" --subresource=status --type=json -p "${ops}" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	# Not fatal: the callers poll, and give up with the package's conditions on their deadline.
	log "cannot patch the status of ${kind} ${name}"
	return 1
}

runtime_marked() { # KIND NAME [ENDPOINT]
	[[ "$(condition "$1" "$2" RuntimeHealthy)" == True ]] || return 1
	[[ -z "${3:-}" ]] || [[ "$(kubectl_ get "$(pkgres "$1")" "$2" -o jsonpath='{.status.endpoint}')" == "$3" ]]
}

# package_ready KIND NAME REVISION [ENDPOINT] is the loop body of waiting for a package with a
# runtime: once REVISION exists, (re)mark its runtime healthy whenever core's own status writes
# dropped our marks, until the package is Healthy and Installed.
package_ready() {
	local kind=$1 name=$2 rev=$3 endpoint=${4:-}
	kubectl_ get "$(pkgres "${kind}revision")" "${rev}" >/dev/null 2>&1 || return 1
	runtime_marked "${kind}revision" "${rev}" "${endpoint}" ||
		mark_runtime_healthy "${kind}revision" "${rev}" "${endpoint}"
	current_and_healthy "${kind}" "${name}" "${rev}"
}

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

generation_of() { kubectl_ get "$(pkgres "$1")" "$2" -o jsonpath='{.metadata.generation}'; }

# ---------------------------------------------------------------------------------------------
# runtimes

start_function_pat() {
	local args=(--address="127.0.0.1:${FUNCTION_PAT_PORT}" --tls-certs-dir="${PKI}/function-server")
	[[ -n "${E2E_DEBUG}" ]] && args+=(--debug)
	start function-pat "$(log_of function-pat)" "${FN_DIR}/function" "${args[@]}"
	wait_for "function-patch-and-transform on 127.0.0.1:${FUNCTION_PAT_PORT}" \
		listening "${FUNCTION_PAT_PORT}"
}

# start_provider runs the provider with the flags examples/provider/runtime.yaml gives the
# packaged one (local machines only with E2E_LOCAL_MACHINES=1).
start_provider() {
	local args=(--etcd-provider-cidr=198.18.0.0/15) sums
	# The checksums of the test bed's mirror of etcd releases, which cluster/openstack.sh packs.
	sums="$("${REPO_ROOT}/cluster/tools.sh" path etcd-release)/SHA256SUMS"
	[[ -f "${sums}" ]] || die "no ${sums}: bring the test bed up first (cluster/openstack.sh up)"
	args+=(--etcd-release-checksums="${sums}")
	if [[ -n "${E2E_LOCAL_MACHINES}" ]]; then
		args+=(--enable-local-machines --local-machines-dir="${MACHINES_DIR}" --etcd-binaries-dir="${ETCD_BINARIES}")
	fi
	start provider "$(log_of provider)" "${STATE}/bin/provider" \
		--metrics-bind-address="127.0.0.1:${PROVIDER_METRICS_PORT}" \
		--health-probe-bind-address="127.0.0.1:${PROVIDER_HEALTH_PORT}" \
		--poll="${E2E_PROVIDER_POLL}" --debug \
		"${args[@]}"
	wait_for "the provider's /readyz" http_ok "http://127.0.0.1:${PROVIDER_HEALTH_PORT}/readyz"
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
		echo "E2E_FUNCTION_PAT_BINARY=${FN_DIR}/function"
		echo "E2E_PROVIDER_NAME=${PROVIDER_NAME}"
		echo "E2E_PROVIDER_SOURCE=${E2E_PROVIDER_SOURCE}"
		echo "E2E_CONFIGURATION_NAME=${CONFIGURATION_NAME}"
		echo "E2E_CONFIGURATION_SOURCE=${E2E_CONFIGURATION_SOURCE}"
		echo "E2E_PROVIDER_LOG=${STATE}/provider.log"
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
		# `cannot get TLS secret: : resource name may not be empty`); init fills them with a CA
		# and client certificate of its own that nothing here uses (core start reads ours).
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

start_core() {
	running crossplane && return 0
	kubectl_ create namespace "${CROSSPLANE_NAMESPACE}" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
	log "crossplane core init"
	core_init
	# The Secret every revision names as tlsServerSecretName (see PACKAGE_TLS_SECRET).
	kubectl_ -n "${CROSSPLANE_NAMESPACE}" create secret generic "${PACKAGE_TLS_SECRET}" \
		--from-file=tls.crt="${PKI}/function-server/tls.crt" --dry-run=client -o yaml |
		kubectl_ apply -f - >/dev/null
	# Before core starts, so its first pulls already go to the local registry.
	image_config
	mkdir -p "${STATE}/cache/xpkg" "${STATE}/cache/xfn"
	local debug=()
	[[ -n "${E2E_DEBUG}" ]] && debug=(--debug)
	# Core binds its metrics and probe ports on all addresses (":<port>"; v2.4.0 has no host
	# flag); webhooks are off, the port is set anyway so nothing can claim :9443 by default.
	start crossplane "$(log_of crossplane)" "${CORE_DIR}/crossplane" "${debug[@]}" core start \
		--namespace="${CROSSPLANE_NAMESPACE}" \
		--package-runtime=External \
		--enable-webhooks=false \
		--tls-client-certs-dir="${PKI}/core-client" \
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

# restart (for installed_each) starts the runtimes of installed packages again and, when core
# may have seen the registry without their packages, makes it reconcile them right away (any
# change of the object queues it) instead of after its error backoff.
restart() {
	local kind=$1 name=$2
	case "${kind}" in
	function)
		start_function_pat
		# The port may have changed while we were down.
		local rev endpoint=127.0.0.1:${FUNCTION_PAT_PORT}
		rev=$(kubectl_ get "$(pkgres function)" "${name}" -o jsonpath='{.status.currentRevision}')
		if [[ -n "${rev}" ]] && ! runtime_marked functionrevision "${rev}" "${endpoint}"; then
			mark_runtime_healthy functionrevision "${rev}" "${endpoint}"
		fi
		;;
	provider) start_provider ;;
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
}

cmd_up() {
	local t0=${SECONDS}
	lock
	mkdir -p "${LOGS}" "${INSTALLED}"
	forget_dead
	resolve_tools
	# Our own control plane: its state is $STATE/kube, apart from the dev cluster of `make dev`.
	RUN_DIR=${STATE} "${REPO_ROOT}/cluster/kube.sh" up 7>&-
	ensure_pki
	load_ports

	start registry "$(log_of registry)" "${TOOLS_BIN}/registry" \
		-addr="127.0.0.1:${REGISTRY_PORT}" -addr-file="${STATE}/registry.addr"
	wait_for "the registry on $(registry)" http_ok "http://$(registry)/v2/"

	# Packages first: the package objects in etcd name them (after a down, the registry is new).
	REPUSHED=false
	ensure_function_pushed
	installed_each prune
	installed_each repush
	start_core
	# Again when core was running already: the registry port may have changed.
	image_config
	installed_each restart
	installed_each healthy_again
	write_env
	log "up in $((SECONDS - t0))s: registry $(registry), core /readyz on 127.0.0.1:${CORE_HEALTH_PORT}; env: ${ENV_FILE}"
}

# require_up loads what install-* needs and fails unless `up` has run.
require_up() {
	if ! running registry || ! running crossplane; then
		die "not up: run cluster/e2e.sh up first"
	fi
	forget_dead
	resolve_tools_quietly
	load_ports
	write_env
	mkdir -p "${INSTALLED}"
}

cmd_install_function() {
	lock
	require_up
	ensure_function_pushed
	local source=${E2E_FUNCTION_PAT_SOURCE}:${FUNCTION_PAT_VERSION} digest rev t0=${SECONDS}
	digest=$(pushed_digest "${FUNCTION_PAT_REPOSITORY}" "${FUNCTION_PAT_VERSION}")
	apply_package Function "${FUNCTION_PAT_NAME}" "${source}" "${digest}"
	rev=$(revision_name "${FUNCTION_PAT_NAME}" "${digest}" "$(generation_of function "${FUNCTION_PAT_NAME}")")
	start_function_pat
	cat >"${INSTALLED}/function-pat.env" <<-EOF
		KIND=function
		NAME=${FUNCTION_PAT_NAME}
		REPOSITORY=${FUNCTION_PAT_REPOSITORY}
		TAG=${FUNCTION_PAT_VERSION}
		XPKG=${FN_XPKG}
	EOF
	ON_TIMEOUT="describe_package function ${FUNCTION_PAT_NAME}"
	wait_for "Function ${FUNCTION_PAT_NAME} (revision ${rev}) Healthy and Installed" \
		package_ready function "${FUNCTION_PAT_NAME}" "${rev}" "127.0.0.1:${FUNCTION_PAT_PORT}"
	log "Function ${FUNCTION_PAT_NAME} healthy in $((SECONDS - t0))s (${source}, mTLS on 127.0.0.1:${FUNCTION_PAT_PORT})"
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
	[[ $# -eq 2 ]] || usage
	local xpkg=$1 binary=$2
	[[ -f "${xpkg}" ]] || die "${xpkg}: no such package file"
	[[ -x "${binary}" && -f "${binary}" ]] || die "${binary}: not an executable file"
	xpkg=$(realpath "${xpkg}")
	binary=$(realpath "${binary}")
	lock
	require_up
	local tag digest rev t0=${SECONDS}
	tag=$(tag_of "${xpkg}")
	# A copy: the restore of the next `up` must push the very package the revision was made from.
	mkdir -p "${STATE}/packages" "${STATE}/bin"
	cp -f "${xpkg}" "${STATE}/packages/provider.xpkg"
	push "${STATE}/packages/provider.xpkg" "${PROVIDER_REPOSITORY}" "${tag}"
	digest=$(pushed_digest "${PROVIDER_REPOSITORY}" "${tag}")
	log "pushed $(registry)/${PROVIDER_REPOSITORY}:${tag} (${digest})"
	apply_package Provider "${PROVIDER_NAME}" "${E2E_PROVIDER_SOURCE}:${tag}" "${digest}"
	rev=$(revision_name "${PROVIDER_NAME}" "${digest}" "$(generation_of provider "${PROVIDER_NAME}")")
	# What a platform team applies next to the Provider (examples/provider): the activation
	# policy (safe-start: the managed resources stay inactive MRDs, with no CRD, until a policy
	# activates them), and the ServiceAccount, runtime config and Node reader role.
	kubectl_ apply -f "${REPO_ROOT}/examples/provider/activation.yaml" \
		-f "${REPO_ROOT}/examples/provider/runtime.yaml" >/dev/null
	cat >"${INSTALLED}/provider.env" <<-EOF
		KIND=provider
		NAME=${PROVIDER_NAME}
		REPOSITORY=${PROVIDER_REPOSITORY}
		TAG=${tag}
		XPKG=${STATE}/packages/provider.xpkg
	EOF
	ON_TIMEOUT="describe_package provider ${PROVIDER_NAME}"
	wait_for "Provider ${PROVIDER_NAME} (revision ${rev}) Healthy and Installed" \
		package_ready provider "${PROVIDER_NAME}" "${rev}"
	ON_TIMEOUT="kubectl_ get managedresourcedefinitions"
	wait_for "the provider's managed resources Active and their CRDs Established" mrds_active
	ON_TIMEOUT=
	# Always the binary given now: it may be a new build.
	stop provider
	cp -f "${binary}" "${STATE}/bin/provider"
	start_provider
	log "Provider ${PROVIDER_NAME} healthy and running in $((SECONDS - t0))s (log: ${STATE}/provider.log)"
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
	local name source tag digest rev t0=${SECONDS}
	name=$(dns_label "${repo}")
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
	apply_package Configuration "${name}" "${source}:${tag}" "${digest}" "${extra}"
	rev=$(revision_name "${name}" "${digest}" "$(generation_of configuration "${name}")")
	cat >"${INSTALLED}/configuration-${name}.env" <<-EOF
		KIND=configuration
		NAME=${name}
		REPOSITORY=${repo}
		TAG=${tag}
		XPKG=${STATE}/packages/${name}.xpkg
	EOF
	ON_TIMEOUT="describe_package configuration ${name}"
	wait_for "Configuration ${name} (revision ${rev}) Healthy and Installed" \
		current_and_healthy configuration "${name}" "${rev}"
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
	local k
	for k in function:${FUNCTION_PAT_NAME} provider:${PROVIDER_NAME}; do
		healthy_and_installed "${k%%:*}" "${k#*:}" ||
			die "${k%%:*} ${k#*:} is not Healthy: run install-function and install-provider first"
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
		local i
		for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
			stop "${COMPONENTS[i]}"
		done
		# Members outlive the provider (their own session): stop what EtcdDatabases left.
		stop_members "${MACHINES_DIR}"
		RUN_DIR=${STATE} "${REPO_ROOT}/cluster/kube.sh" down 7>&-
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
			printf '%-24s running (pid %s)\n' "${c}" "$(pid_of "${c}")"
		else
			printf '%-24s stopped\n' "${c}"
			case "${c}" in registry | crossplane) rc=3 ;; esac
		fi
	done
	if [[ -f "${PORTS_FILE}" ]]; then
		sed 's/=/ /' "${PORTS_FILE}" | while read -r var port; do printf '%-24s %s\n' "${var}" "${port}"; done
	fi
	RUN_DIR=${STATE} "${REPO_ROOT}/cluster/kube.sh" status | sed 's/^/kube: /' || rc=3
	if ((rc == 0)); then
		resolve_tools_quietly
		kubectl_ get pkg 2>/dev/null || true
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
