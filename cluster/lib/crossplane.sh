#!/usr/bin/env bash
# cluster/lib/crossplane.sh: a real Crossplane with this tree's packages installed, the way a
# platform team installs them. Sourced by e2e-run.sh (the e2e tests) and dev.sh (`make dev`),
# which differ only in where the stack keeps its state (RUN_DIR of cluster/e2e.sh).

# crossplane_up smoke|no-smoke builds the provider and configuration packages from the work tree,
# brings up cluster/e2e.sh's control plane, registry and Crossplane core, and installs
# function-patch-and-transform, the provider (its runtime image running as a Pod) and the
# configuration through the package manager. smoke runs e2e.sh's self-test in between.
crossplane_up() {
	local provider_xpkg configuration_xpkg
	provider_xpkg=$(cluster/xpkg.sh)
	configuration_xpkg=$(cluster/xpkg.sh configuration)
	cluster/tools.sh crossplane-core function-pat
	cluster/e2e.sh up
	cluster/e2e.sh install-function
	cluster/e2e.sh install-provider "${provider_xpkg}"
	if [[ $1 == smoke ]]; then
		cluster/e2e.sh smoke
	fi
	cluster/e2e.sh install-configuration "${configuration_xpkg}"
}
