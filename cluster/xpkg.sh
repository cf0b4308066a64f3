#!/usr/bin/env bash
# cluster/xpkg.sh: build the provider's Crossplane package (.xpkg) without Docker.
#
# Usage: cluster/xpkg.sh                 the provider package (what `make xpkg` calls first)
#        cluster/xpkg.sh configuration   the configuration package (package/configuration)
#
# Steps:
#   1. the provider binary, static:          _output/bin/linux_amd64/provider
#   2. its runtime OCI image as a tarball:   _output/xpkg/provider-stackservices-runtime-<v>.tar
#      (tools/cmd/runtime-image: empty base + the binary + CA bundle; no container runtime)
#   3. `crossplane xpkg build` with that image embedded:
#                                            _output/xpkg/provider-stackservices-<v>.xpkg
#   4. a structural check of the result: one layer holds the provider binary, the package layer
#      holds package.yaml with the Provider meta and every CRD.
#
# Only crossplane.yaml and the YAML under the XPKG_INCLUDE directories of the package root are
# packaged (they are staged into _output/xpkg/root): `xpkg build` reads every YAML under its root
# and fails on anything that is not a CRD, MRD or webhook configuration, so other manifests
# living beside them (dev-only or another package's) must not reach it.
#
# Environment:
#   VERSION              package version/tag (default: git describe --tags --dirty, else v0.0.0-dev)
#   PROVIDER_PKG         Go package of the provider main (default ./cmd/provider)
#   XPKG_PACKAGE_ROOT    directory holding crossplane.yaml (default package)
#   XPKG_INCLUDE         space-separated subdirectories of it to package (default crds)
#   XPKG_EXAMPLES_ROOT   examples to embed as the package's examples layer (default: none)
#   GO_LDFLAGS           extra -ldflags for the provider binary
#   CACHE_DIR            passed through to cluster/tools.sh
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
LOG_PREFIX=xpkg.sh
cd "${REPO_ROOT}"

NAME=provider-stackservices
PROVIDER_PKG=${PROVIDER_PKG:-./cmd/provider}
XPKG_PACKAGE_ROOT=${XPKG_PACKAGE_ROOT:-package}
XPKG_INCLUDE=${XPKG_INCLUDE:-crds}
XPKG_EXAMPLES_ROOT=${XPKG_EXAMPLES_ROOT:-}
GO_LDFLAGS=${GO_LDFLAGS:-}
OUT=${REPO_ROOT}/_output
BIN=${OUT}/bin/linux_amd64/provider
XPKG_DIR=${OUT}/xpkg

version() {
	if [[ -n "${VERSION:-}" ]]; then
		echo "${VERSION}"
	elif git -C "${REPO_ROOT}" describe --tags --dirty 2>/dev/null; then
		:
	else
		echo v0.0.0-dev
	fi
}

build_binary() {
	log "building ${PROVIDER_PKG} -> ${BIN#"${REPO_ROOT}"/}"
	mkdir -p "$(dirname "${BIN}")"
	# Static (no libc in the image) and reproducible (-trimpath, no VCS stamp that changes with
	# every edit of an unrelated file). The image is linux/amd64 whatever the build host is.
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${V} ${GO_LDFLAGS}" \
		-o "${BIN}" "${PROVIDER_PKG}" || die "go build ${PROVIDER_PKG} failed"
}

build_runtime_image() {
	local tool=${OUT}/tools/runtime-image
	# Built from the nested tools/ module, which pins go-containerregistry apart from the
	# provider's go.mod. go build relinks only when something changed.
	(cd "${REPO_ROOT}/tools" && CGO_ENABLED=0 go build -trimpath -o "${tool}" ./cmd/runtime-image) ||
		die "cannot build tools/cmd/runtime-image"
	"${tool}" -binary "${BIN}" -out "${IMAGE_TAR}" -tag "${NAME}-runtime:${V}" >/dev/null ||
		die "cannot build the runtime image"
	log "runtime image ${IMAGE_TAR#"${REPO_ROOT}"/}"
}

# stage_package_root copies the Provider meta and the included YAML into a clean package root.
stage_package_root() {
	local src=${XPKG_PACKAGE_ROOT} d
	[[ "${src}" == /* ]] || src=${REPO_ROOT}/${src}
	[[ -f "${src}/crossplane.yaml" ]] || die "${src}/crossplane.yaml not found"
	rm -rf "${STAGE}"
	mkdir -p "${STAGE}"
	cp "${src}/crossplane.yaml" "${STAGE}/"
	for d in ${XPKG_INCLUDE}; do
		[[ -d "${src}/${d}" ]] || continue
		(cd "${src}" && find "${d}" -type f \( -name '*.yaml' -o -name '*.yml' \) -print0 |
			xargs -0 -r cp --parents -t "${STAGE}")
	done
	log "package root: crossplane.yaml + $(find "${STAGE}" -type f | wc -l | awk '{print $1 - 1}') file(s) from ${XPKG_PACKAGE_ROOT}/{${XPKG_INCLUDE// /,}}"
}

build_xpkg() {
	local crossplane examples
	"${REPO_ROOT}/cluster/tools.sh" crossplane-cli
	crossplane=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-cli)
	# The CLI defaults --examples-root to ./examples (relative to the working directory), which
	# here is the e2e manifests: point it at a directory that does not exist unless asked.
	examples=${XPKG_EXAMPLES_ROOT:-${XPKG_DIR}/no-examples}
	rm -f "${XPKG}"
	"${crossplane}" xpkg build \
		--package-root="${STAGE}" \
		--examples-root="${examples}" \
		--embed-runtime-image-tarball="${IMAGE_TAR}" \
		--package-file="${XPKG}" || die "crossplane xpkg build failed"
}

# layer_of TARBALL FILE prints the name, inside the image tarball, of the layer that contains FILE.
layer_of() {
	local tarball=$1 file=$2 layer listing
	while read -r layer; do
		# Listing first, then grep: with pipefail, `tar | grep -q` fails when grep exits early.
		listing=$(tar -xOf "${tarball}" "${layer}" | tar -tz) || die "cannot list ${layer} of ${tarball}"
		if grep -qx "${file}" <<<"${listing}"; then
			echo "${layer}"
			return 0
		fi
	done < <(tar -xOf "${tarball}" manifest.json | grep -o '"[^"]*\.tar\.gz"' | tr -d '"')
	return 1
}

# verify_xpkg checks what Crossplane will look for in the package: the package.yaml stream with
# exactly our Provider and every staged CRD, and the runtime layer with the entrypoint binary.
verify_xpkg() {
	local pkg_layer bin_layer stream want got
	bin_layer=$(layer_of "${XPKG}" usr/local/bin/provider) ||
		die "${XPKG}: no layer holds usr/local/bin/provider"
	pkg_layer=$(layer_of "${XPKG}" package.yaml) || die "${XPKG}: no layer holds package.yaml"
	stream=$(tar -xOf "${XPKG}" "${pkg_layer}" | tar -xzO package.yaml)
	grep -q '^kind: Provider$' <<<"${stream}" || die "package.yaml has no Provider meta"
	want=$(find "${STAGE}" -mindepth 2 -type f -exec cat {} + |
		grep -c '^kind: CustomResourceDefinition$' || true)
	got=$(grep -c '^kind: CustomResourceDefinition$' <<<"${stream}" || true)
	[[ "${want}" == "${got}" ]] || die "package.yaml holds ${got} CRDs, ${want} were staged"
	log "verified: runtime layer ${bin_layer:0:12} has the binary; package layer ${pkg_layer:0:12} has the Provider and ${got} CRD(s)"
}

# build_configuration builds the configuration package (XRDs and Compositions of
# package/configuration, which has no runtime image) and prints its path.
build_configuration() {
	local start=${SECONDS} crossplane out
	"${REPO_ROOT}/cluster/tools.sh" crossplane-cli
	crossplane=$("${REPO_ROOT}/cluster/tools.sh" path crossplane-cli)
	out=${XPKG_DIR}/configuration-stackservices-$(version).xpkg
	mkdir -p "${XPKG_DIR}"
	rm -f "${out}"
	"${crossplane}" xpkg build --package-root="${REPO_ROOT}/package/configuration" \
		--examples-root="${XPKG_DIR}/no-examples" --package-file="${out}" >&2 ||
		die "crossplane xpkg build refused package/configuration"
	log "built ${out#"${REPO_ROOT}"/} in $((SECONDS - start))s"
	echo "${out}"
}

main() {
	if [[ ${1:-} == configuration ]]; then
		build_configuration
		return
	fi
	[[ $# -eq 0 ]] || die "unknown arguments (see the header of $0)"
	local start=${SECONDS}
	V=$(version)
	IMAGE_TAR=${XPKG_DIR}/${NAME}-runtime-${V}.tar
	XPKG=${XPKG_DIR}/${NAME}-${V}.xpkg
	STAGE=${XPKG_DIR}/root
	mkdir -p "${XPKG_DIR}"
	build_binary
	build_runtime_image
	stage_package_root
	build_xpkg
	verify_xpkg
	log "built ${XPKG#"${REPO_ROOT}"/} in $((SECONDS - start))s"
	echo "${XPKG}"
}

main "$@"
