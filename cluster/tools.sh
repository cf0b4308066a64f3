#!/usr/bin/env bash
# cluster/tools.sh: build the test bed's tool binaries from Go modules and cache them by version.
#
# Usage:
#   cluster/tools.sh <tool>[@<version>]...   build (or find in the cache) each tool
#   cluster/tools.sh all                     kube, etcd and crossplane-cli at their default versions
#   cluster/tools.sh path <tool>[@<version>] print the cached binary directory (kube, etcd) or
#                                            binary path (crossplane-cli, versitygw, cloud-init) or directory
#                                            (crossplane-core, function-pat); builds nothing
#
# Tools:
#   kube            k8s.io/kubernetes kube-apiserver, kube-controller-manager, kubectl, plus the
#                   etcd that runs behind them, in one directory usable as KUBEBUILDER_ASSETS
#   kube-node       kubelet, kube-proxy and kube-scheduler of the same version, in the same
#                   directory (cluster/node.sh; `path` prints that directory); not part of `all`
#   etcd            etcd, etcdctl, etcdutl (any version: etcd@v3.5.35, or ETCD_VERSION=...)
#   etcd-release    that etcd packed as etcd's release tarball, with a SHA256SUMS of every one packed
#                   (the test bed's mirror of etcd releases; `path` prints the mirror's directory)
#   crossplane-cli  the `crossplane` CLI (xpkg build/push, render)
#   versitygw       the versitygw S3 gateway (the second S3 server; not part of `all`)
#   crossplane-core Crossplane core (`crossplane core init|start`), with the CRDs it installs copied
#                   next to it in crds/ (for CRDS_PATH); for the e2e tests, not part of `all`
#   function-pat    function-patch-and-transform (binary `function`) with its package root
#                   (crossplane.yaml + input CRD) copied next to it in package/; e2e, not in `all`
#   bed             the test bed's own commands (the nested tools/ module: registry, runtime-image,
#                   pause), in one directory; rebuilt by go build when their source changed
#   cloud-init      Debian's cloud-init package, unpacked (never installed: installed, it would
#                   run at the machine's next boot), with a `cloud-init` wrapper for the schema
#                   checks of the user-data the provider writes; not part of `all`
#
# Why not `go install tool@version`: kubernetes and etcd carry replace directives that `go install`
# refuses, and the Go proxy here refuses the version listing it asks for crossplane modules. Each
# tool is therefore built in its own scratch module under $CACHE_DIR/src/<tool>-<version>/,
# outside the project's go.mod, so its dependency graph never touches the provider's.
#
# Environment: CACHE_DIR (default <repo root>/.cache), KUBE_VERSION, KUBE_ETCD_VERSION,
# ETCD_VERSION, CROSSPLANE_CLI_VERSION, VERSITYGW_VERSION, CROSSPLANE_CORE_VERSION,
# FUNCTION_PAT_VERSION, CLOUD_INIT_VERSION.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
LOG_PREFIX=tools.sh
CACHE_DIR=${CACHE_DIR:-${REPO_ROOT}/.cache}

KUBE_VERSION=${KUBE_VERSION:-v1.35.8}
# The etcd placed next to kube-apiserver. Kept apart from ETCD_VERSION so that building another
# etcd version for the etcd features never changes the one behind the API server.
# Debian's etcd 3.4 lacks watch progress notifications, hence a built 3.6.
KUBE_ETCD_VERSION=${KUBE_ETCD_VERSION:-v3.6.16}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
CROSSPLANE_CLI_VERSION=${CROSSPLANE_CLI_VERSION:-v2.5.0}
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
CROSSPLANE_CORE_VERSION=${CROSSPLANE_CORE_VERSION:-v2.4.0}
# v0.5.0 is the newest release whose whole dependency graph downloads through the proxy here
# (v0.10.x do not).
FUNCTION_PAT_VERSION=${FUNCTION_PAT_VERSION:-v0.5.0}
# Debian 12's cloud-init (the version a bookworm image boots with), "v" + the Debian version.
CLOUD_INIT_VERSION=${CLOUD_INIT_VERSION:-v22.4.2-1+deb12u4}

# Static, reproducible binaries that do not depend on the build host's libc. GOWORK=off keeps a
# go.work in the repository (if one appears) from capturing the scratch modules under .cache/.
# -mod=mod lets go build record any go.sum line go get did not; -buildvcs=false because the scratch
# modules sit inside the project's git work tree.
export CGO_ENABLED=0 GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=mod -buildvcs=false"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# all_exist FILE... succeeds when every file is an executable regular file (or a symlink to one).
all_exist() {
	local f
	for f in "$@"; do
		[[ -x "${f}" && -f "${f}" ]] || return 1
	done
}

# with_lock NAME CMD... runs CMD holding an exclusive lock, so that two make targets asking for
# the same tool at once build it once instead of racing on the same scratch module and outputs.
with_lock() {
	local name=$1
	shift
	mkdir -p "${CACHE_DIR}/locks"
	(
		flock 9
		"$@"
	) 9>"${CACHE_DIR}/locks/${name}.lock"
}

# quiet CMD... runs a go command with its chatter (downloads, "go: added ...") going to $BUILD_LOG;
# on failure the end of that log, which holds the go error, is shown.
quiet() {
	if ! "$@" >>"${BUILD_LOG}" 2>&1; then
		tail -n 40 "${BUILD_LOG}" >&2
		log "full log: ${BUILD_LOG}"
		return 1
	fi
}

# scratch_module DIR NAME creates (once) an empty module in DIR, enters it and starts a fresh
# build.log there.
scratch_module() {
	local dir=$1 name=$2
	mkdir -p "${dir}"
	cd "${dir}"
	BUILD_LOG=${dir}/build.log
	: >"${BUILD_LOG}"
	if [[ ! -f go.mod ]]; then
		go mod init "scratch.local/${name}" >/dev/null 2>&1 || die "go mod init in ${dir} failed"
	fi
}

# gobuild OUT PKG [LDFLAGS] builds PKG into OUT via a temporary name, so an interrupted build
# never leaves a file the cache check would mistake for a finished binary.
gobuild() {
	local out=$1 pkg=$2 ldflags=${3:-}
	mkdir -p "$(dirname "${out}")"
	quiet go build -trimpath -ldflags "-s -w ${ldflags}" -o "${out}.tmp" "${pkg}" ||
		die "go build ${pkg} failed (see the go error above)"
	mv -f "${out}.tmp" "${out}"
}

# ---------------------------------------------------------------------------------------------
# etcd

etcd_dir() { echo "${CACHE_DIR}/etcd/$1"; }

build_etcd() {
	local version=$1 dir
	dir=$(etcd_dir "${version}")
	all_exist "${dir}/etcd" "${dir}/etcdctl" "${dir}/etcdutl" && return 0
	local start=${SECONDS}
	log "building etcd ${version} (about 90 CPU-seconds)"
	(
		scratch_module "${CACHE_DIR}/src/etcd-${version}" "etcd"
		quiet go get "go.etcd.io/etcd/server/v3@${version}" "go.etcd.io/etcd/etcdutl/v3@${version}" \
			"go.etcd.io/etcd/etcdctl/v3@${version}" || die "go get etcd ${version} failed"
		# `package main` lives at each module's root.
		gobuild "${dir}/etcd" go.etcd.io/etcd/server/v3
		gobuild "${dir}/etcdctl" go.etcd.io/etcd/etcdctl/v3
		gobuild "${dir}/etcdutl" go.etcd.io/etcd/etcdutl/v3
	)
	log "built etcd ${version} in $((SECONDS - start))s -> ${dir}"
}

# etcd-release: a built etcd packed as etcd's own release tarball
# (etcd-<version>-linux-amd64/{etcd,etcdctl,etcdutl} in <version>/etcd-<version>-linux-amd64.tar.gz),
# and SHA256SUMS of every tarball packed, for the test bed's mirror of etcd releases.

etcd_release_dir() { echo "${CACHE_DIR}/etcd-releases"; }

build_etcd_release() {
	local version=$1 root name
	root=$(etcd_release_dir)
	name=etcd-${version}-linux-amd64
	[[ -f "${root}/${version}/${name}.tar.gz" ]] && grep -q "/${name}.tar.gz\$" "${root}/SHA256SUMS" 2>/dev/null && return 0
	with_lock "etcd-${version}" build_etcd "${version}"
	local tmp
	tmp=$(mktemp -d "${root}.XXXXXX")
	mkdir -p "${tmp}/${name}" "${root}/${version}"
	cp "$(etcd_dir "${version}")"/{etcd,etcdctl,etcdutl} "${tmp}/${name}/"
	tar -C "${tmp}" --owner=0 --group=0 --numeric-owner --sort=name -czf "${tmp}/${name}.tar.gz" "${name}"
	mv "${tmp}/${name}.tar.gz" "${root}/${version}/${name}.tar.gz"
	rm -rf "${tmp}"
	(cd "${root}" && sha256sum v*/etcd-v*-linux-amd64.tar.gz >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
	log "packed etcd ${version} -> ${root}/${version}/${name}.tar.gz"
}

# ---------------------------------------------------------------------------------------------
# cloud-init

cloud_init_path() { echo "${CACHE_DIR}/cloud-init/$1/cloud-init"; }

build_cloud_init() {
	local version=$1 wrapper dir
	wrapper=$(cloud_init_path "${version}")
	dir=$(dirname "${wrapper}")
	all_exist "${wrapper}" && return 0
	log "unpacking Debian's cloud-init ${version#v}"
	rm -rf "${dir}.tmp"
	mkdir -p "${dir}.tmp"
	# apt-get download needs the package lists: refresh them once if the version is unknown.
	if ! (cd "${dir}.tmp" && apt-get download -q "cloud-init=${version#v}") >/dev/null 2>&1; then
		apt-get update -q >/dev/null 2>&1 || die "apt-get update failed"
		(cd "${dir}.tmp" && apt-get download -q "cloud-init=${version#v}") >/dev/null 2>&1 ||
			die "apt-get download cloud-init=${version#v} failed"
	fi
	dpkg-deb -x "${dir}.tmp"/cloud-init_*.deb "${dir}.tmp/root"
	rm -f "${dir}.tmp"/cloud-init_*.deb
	# shellcheck disable=SC2016 # "$@" is the wrapper's, not this script's.
	printf '#!/bin/sh\n# Debian'"'"'s cloud-init %s, unpacked by cluster/tools.sh for cloud-init schema.\nPYTHONPATH=%s exec /usr/bin/python3 %s "$@"\n' \
		"${version#v}" "${dir}/root/usr/lib/python3/dist-packages" "${dir}/root/usr/bin/cloud-init" >"${dir}.tmp/cloud-init"
	chmod 755 "${dir}.tmp/cloud-init"
	rm -rf "${dir}"
	mv "${dir}.tmp" "${dir}"
}

# ---------------------------------------------------------------------------------------------
# kube

kube_dir() { echo "${CACHE_DIR}/kube/$1"; }

# kube_staging_replaces KUBERNETES_GO_MOD STAGING_VERSION prints one replace directive per staging
# module that kubernetes' own go.mod points at ./staging/...: as a dependency those local paths
# mean nothing, and the k8s.io/* v0.0.0 requirements only resolve through these replaces.
kube_staging_replaces() {
	local gomod=$1 staging=$2
	awk -v v="${staging}" '
		# Both the block form "replace ( ... )" and single-line "replace a => b" are handled.
		$1 == "replace" && $2 == "(" { inblock = 1; next }
		inblock && $1 == ")" { inblock = 0; next }
		{
			line = $0
			sub(/^[ \t]+/, "", line)
			sub(/^replace[ \t]+/, "", line)
			if ((inblock || $1 == "replace") && line ~ /=>[ \t]*\.\/staging\//) {
				split(line, parts, /[ \t]+/)
				printf "replace %s => %s %s\n", parts[1], parts[1], v
			}
		}' "${gomod}"
}

# The control plane's commands (kube), and a node's (kube-node).
KUBE_CMDS=(kube-apiserver kube-controller-manager kubectl)
KUBE_NODE_CMDS=(kubelet kube-proxy kube-scheduler)

build_kube() {
	local version=$1 dir
	dir=$(kube_dir "${version}")
	# etcd first: it is cheap and kube's directory is only complete with it.
	with_lock "etcd-${KUBE_ETCD_VERSION}" build_etcd "${KUBE_ETCD_VERSION}"
	local etcd_bin
	etcd_bin="$(etcd_dir "${KUBE_ETCD_VERSION}")/etcd"
	build_kube_cmds "${version}" "${KUBE_CMDS[@]}"
	# A symlink keeps one copy of etcd per version; envtest and kube.sh only exec it.
	if [[ "$(readlink "${dir}/etcd" 2>/dev/null)" != "${etcd_bin}" ]]; then
		ln -sfn "${etcd_bin}" "${dir}/etcd"
	fi
}

# build_kube_cmds VERSION CMD... builds the commands of k8s.io/kubernetes VERSION that are not in
# its cache directory yet (about 5 minutes cold for the control plane's, 2 for a node's).
build_kube_cmds() {
	local version=$1 dir c cmds=()
	shift
	dir=$(kube_dir "${version}")
	for c in "$@"; do all_exist "${dir}/${c}" || cmds+=("${c}"); done
	if ((${#cmds[@]} > 0)); then
		local start=${SECONDS}
		log "building kubernetes ${version}: ${cmds[*]}"
		(
			local src="${CACHE_DIR}/src/kube-${version}"
			scratch_module "${src}" "kube"
			local staging="v0.${version#v1.}"
			local gomod
			gomod=$(go mod download -json "k8s.io/kubernetes@${version}" 2>>"${BUILD_LOG}" |
				sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
			[[ -f "${gomod}" ]] || die "cannot download k8s.io/kubernetes@${version}"
			local replaces
			replaces=$(kube_staging_replaces "${gomod}" "${staging}")
			[[ -n "${replaces}" ]] || die "no ./staging replaces found in ${gomod}"
			# Rewrite the replace list every time: cheap, and keeps go.mod correct if an earlier
			# attempt was interrupted halfway.
			sed -i '/^replace /d' go.mod
			printf '%s\n' "${replaces}" >>go.mod
			log "kubernetes ${version}: $(wc -l <<<"${replaces}") staging modules pinned to ${staging}"
			local pkgs=()
			for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${c}@${version}"); done
			quiet go get "${pkgs[@]}" || die "go get kubernetes ${version} failed"
			# What kubernetes' hack/lib/version.sh stamps: without it the server reports
			# v0.0.0-master, which clients comparing server versions refuse or misjudge.
			local minor=${version#v1.}
			minor=${minor%%.*}
			local ld="" p
			for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
				ld+=" -X ${p}.gitVersion=${version} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
				ld+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
			done
			for c in "${cmds[@]}"; do
				local t=${SECONDS}
				gobuild "${dir}/${c}" "k8s.io/kubernetes/cmd/${c}" "${ld}"
				log "  ${c}: $((SECONDS - t))s"
			done
		)
		log "built ${cmds[*]} ${version} in $((SECONDS - start))s -> ${dir}"
	fi
}

# ---------------------------------------------------------------------------------------------
# crossplane-cli

crossplane_cli_path() { echo "${CACHE_DIR}/crossplane-cli/$1/crossplane"; }

build_crossplane_cli() {
	local version=$1 out
	out=$(crossplane_cli_path "${version}")
	all_exist "${out}" && return 0
	local start=${SECONDS}
	log "building crossplane CLI ${version}"
	(
		scratch_module "${CACHE_DIR}/src/crossplane-cli-${version}" "crossplane-cli"
		quiet go get "github.com/crossplane/cli/v2/cmd/crossplane@${version}" ||
			die "go get crossplane CLI ${version} failed"
		# The CLI's own build (nix/build.nix) stamps its version here; `crossplane version`
		# and the User-Agent it sends to registries read it.
		gobuild "${out}" github.com/crossplane/cli/v2/cmd/crossplane \
			"-X=github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${version}"
	)
	log "built crossplane-cli ${version} in $((SECONDS - start))s -> ${out}"
}

# ---------------------------------------------------------------------------------------------
# versitygw

versitygw_path() { echo "${CACHE_DIR}/versitygw/$1/versitygw"; }

build_versitygw() {
	local version=$1 out
	out=$(versitygw_path "${version}")
	all_exist "${out}" && return 0
	local start=${SECONDS}
	log "building versitygw ${version} (about 130 CPU-seconds)"
	(
		scratch_module "${CACHE_DIR}/src/versitygw-${version}" "versitygw"
		quiet go get "github.com/versity/versitygw@${version}" || die "go get versitygw ${version} failed"
		# What its Makefile stamps; `versitygw --version` prints it.
		gobuild "${out}" github.com/versity/versitygw/cmd/versitygw \
			"-X=main.Version=${version} -X=main.Build=none -X=main.BuildTime=none"
	)
	log "built versitygw ${version} in $((SECONDS - start))s -> ${out}"
}

# ---------------------------------------------------------------------------------------------
# crossplane-core

crossplane_core_dir() { echo "${CACHE_DIR}/crossplane-core/$1"; }

build_crossplane_core() {
	local version=$1 dir
	dir=$(crossplane_core_dir "${version}")
	all_exist "${dir}/crossplane" && [[ -f "${dir}/crds/.done" ]] && return 0
	local start=${SECONDS}
	log "building crossplane core ${version} (about 100 s cold)"
	(
		scratch_module "${CACHE_DIR}/src/crossplane-core-${version}" "crossplane-core"
		# The apis module is a separate module since v2.x; without pinning it to the same version
		# go get picks an older one that lacks types core v2.4.0 uses.
		quiet go get "github.com/crossplane/crossplane/v2/cmd/crossplane@${version}" \
			"github.com/crossplane/crossplane/apis/v2@${version}" ||
			die "go get crossplane core ${version} failed"
		# Core compares its own version with the packages' spec.crossplane.version constraints
		# (">=v2.0.0"): an unstamped binary would fail them. Same variable as its nix build.
		gobuild "${dir}/crossplane" github.com/crossplane/crossplane/v2/cmd/crossplane \
			"-X=github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${version}"
		# `core init` installs the CRDs it reads from CRDS_PATH (in cluster it is /crds of the
		# image). A copy, not the module cache path: `go clean -modcache` must not break it.
		local mod
		mod=$(go list -m -f '{{.Dir}}' github.com/crossplane/crossplane/v2 2>>"${BUILD_LOG}")
		[[ -d "${mod}/cluster/crds" ]] || die "no cluster/crds in crossplane core module (${mod})"
		rm -rf "${dir}/crds"
		mkdir -p "${dir}/crds"
		cp "${mod}"/cluster/crds/*.yaml "${dir}/crds/"
		chmod -R u+w "${dir}/crds"
		touch "${dir}/crds/.done"
	)
	log "built crossplane-core ${version} in $((SECONDS - start))s -> ${dir}"
}

# ---------------------------------------------------------------------------------------------
# function-pat (function-patch-and-transform)

function_pat_dir() { echo "${CACHE_DIR}/function-pat/$1"; }

build_function_pat() {
	local version=$1 dir
	dir=$(function_pat_dir "${version}")
	all_exist "${dir}/function" && [[ -f "${dir}/package/crossplane.yaml" ]] && return 0
	local start=${SECONDS}
	log "building function-patch-and-transform ${version} (about 60 s cold)"
	(
		local m=github.com/crossplane-contrib/function-patch-and-transform
		scratch_module "${CACHE_DIR}/src/function-pat-${version}" "function-pat"
		quiet go get "${m}@${version}" || die "go get ${m}@${version} failed"
		# `package main` is the module root.
		gobuild "${dir}/function" "${m}"
		# Its package root (Function meta + input CRD) for `crossplane xpkg build`; its own
		# release builds the package from this directory too.
		local mod
		mod=$(go list -m -f '{{.Dir}}' "${m}" 2>>"${BUILD_LOG}")
		[[ -f "${mod}/package/crossplane.yaml" ]] || die "no package/crossplane.yaml in ${mod}"
		rm -rf "${dir}/package"
		cp -r "${mod}/package" "${dir}/package"
		chmod -R u+w "${dir}/package"
	)
	log "built function-pat ${version} in $((SECONDS - start))s -> ${dir}"
}

# ---------------------------------------------------------------------------------------------
# bed

# build_bed builds the commands of the nested tools/ module, which pins go-containerregistry
# apart from the provider's go.mod. go build relinks only what changed: a second call is cheap.
build_bed() {
	local cmd
	for cmd in registry runtime-image pause; do
		(cd "${REPO_ROOT}/tools" && CGO_ENABLED=0 GOWORK=off go build -trimpath -buildvcs=false \
			-o "${CACHE_DIR}/e2e/${cmd}" "./cmd/${cmd}") || die "cannot build tools/cmd/${cmd}"
	done
}

# ---------------------------------------------------------------------------------------------

# resolve TOOL[@VERSION] sets NAME and VERSION, defaulting the version per tool.
resolve() {
	NAME=${1%%@*}
	VERSION=
	[[ "$1" == *@* ]] && VERSION=${1#*@}
	case "${NAME}" in
	kube | kube-node) VERSION=${VERSION:-${KUBE_VERSION}} ;;
	etcd | etcd-release) VERSION=${VERSION:-${ETCD_VERSION}} ;;
	crossplane-cli) VERSION=${VERSION:-${CROSSPLANE_CLI_VERSION}} ;;
	versitygw) VERSION=${VERSION:-${VERSITYGW_VERSION}} ;;
	crossplane-core) VERSION=${VERSION:-${CROSSPLANE_CORE_VERSION}} ;;
	function-pat) VERSION=${VERSION:-${FUNCTION_PAT_VERSION}} ;;
	cloud-init) VERSION=${VERSION:-${CLOUD_INIT_VERSION}} ;;
	bed) VERSION=v0 ;;
	*) die "unknown tool '${NAME}' (kube, kube-node, etcd, etcd-release, crossplane-cli, versitygw, crossplane-core, function-pat, cloud-init)" ;;
	esac
	[[ "${VERSION}" == v* ]] || die "version '${VERSION}' of ${NAME} must start with v"
}

tool_path() {
	resolve "$1"
	case "${NAME}" in
	kube | kube-node) kube_dir "${VERSION}" ;;
	etcd) etcd_dir "${VERSION}" ;;
	etcd-release) etcd_release_dir ;;
	crossplane-cli) crossplane_cli_path "${VERSION}" ;;
	versitygw) versitygw_path "${VERSION}" ;;
	crossplane-core) crossplane_core_dir "${VERSION}" ;;
	function-pat) function_pat_dir "${VERSION}" ;;
	cloud-init) cloud_init_path "${VERSION}" ;;
	bed) echo "${CACHE_DIR}/e2e" ;;
	esac
}

build_tool() {
	resolve "$1"
	case "${NAME}" in
	kube) with_lock "kube-${VERSION}" build_kube "${VERSION}" ;;
	kube-node) with_lock "kube-${VERSION}" build_kube_cmds "${VERSION}" "${KUBE_NODE_CMDS[@]}" ;;
	etcd) with_lock "etcd-${VERSION}" build_etcd "${VERSION}" ;;
	etcd-release) with_lock "etcd-releases" build_etcd_release "${VERSION}" ;;
	crossplane-cli) with_lock "crossplane-cli-${VERSION}" build_crossplane_cli "${VERSION}" ;;
	versitygw) with_lock "versitygw-${VERSION}" build_versitygw "${VERSION}" ;;
	crossplane-core) with_lock "crossplane-core-${VERSION}" build_crossplane_core "${VERSION}" ;;
	function-pat) with_lock "function-pat-${VERSION}" build_function_pat "${VERSION}" ;;
	cloud-init) with_lock "cloud-init-${VERSION}" build_cloud_init "${VERSION}" ;;
	bed) with_lock bed build_bed ;;
	esac
}

main() {
	[[ $# -gt 0 ]] || usage
	case "$1" in
	-h | --help | help) usage ;;
	path)
		[[ $# -eq 2 ]] || usage
		tool_path "$2"
		return
		;;
	all) set -- kube etcd crossplane-cli ;;
	esac
	local t
	for t in "$@"; do
		build_tool "${t}"
	done
}

main "$@"
