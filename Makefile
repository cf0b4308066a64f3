# provider-stackservices
#
#   make dev          OpenStack + a real Crossplane with both packages installed, examples and claims Ready
#   make test         unit, render, integration and e2e tests against real servers, and the package build
#   make reviewable   generate, lint, vet, unit tests; fails on generated-code drift
#   make xpkg         the provider package under _output/xpkg (no Docker needed)

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

TOOLS_BIN := $(CURDIR)/.cache/tools
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
ANGRYJET := $(TOOLS_BIN)/angryjet
# golangci-lint is installed by version from its own module (go install pkg@version): its many
# dependencies never meet the tools module's, and a new version is a new file.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: help
help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# The generators live in the nested tools/ module: crossplane-tools needs newer k8s.io modules
# than the provider's controller-runtime accepts.
$(CONTROLLER_GEN) $(ANGRYJET): tools/go.mod tools/go.sum
	@mkdir -p $(TOOLS_BIN)
	cd tools && go build -o $(TOOLS_BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	cd tools && go build -o $(TOOLS_BIN)/angryjet github.com/crossplane/crossplane-tools/cmd/angryjet

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS_BIN)/golangci-lint.tmp
	GOBIN=$(TOOLS_BIN)/golangci-lint.tmp go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS_BIN)/golangci-lint.tmp/golangci-lint $@
	rmdir $(TOOLS_BIN)/golangci-lint.tmp

.PHONY: tools
tools: $(CONTROLLER_GEN) $(ANGRYJET) $(GOLANGCI_LINT) ## Build the code generators and linters.

.PHONY: generate
generate: tools ## Regenerate deepcopy, method sets and CRDs.
	# Method sets are regenerated in place, not removed first: the hand-written reference
	# resolvers (apis/*/v1alpha1/references.go) need them for the packages to load. A method
	# set left over from a removed type fails to compile, so it cannot go unnoticed.
	rm -f apis/*/zz_generated.deepcopy.go apis/*/*/zz_generated.deepcopy.go apis/*/*/zz_generated.resolvers.go
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	$(ANGRYJET) generate-methodsets --header-file=hack/boilerplate.go.txt ./apis/...
	rm -rf package/crds
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./apis/... output:artifacts:config=package/crds

# Generated files must be what `make generate` makes of the sources in the work tree: the
# check regenerates and compares, so it fails on a stale CRD whether or not anything is
# committed yet (and leaves the fresh files in place, ready to commit).
GENERATED_FILES = find apis -name 'zz_generated.*.go' | sort; find package/crds -name '*.yaml' | sort

.PHONY: check-generated
check-generated: tools ## Fail when generated files differ from what their sources generate.
	@before=$$( { $(GENERATED_FILES); } | xargs sha256sum ); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	after=$$( { $(GENERATED_FILES); } | xargs sha256sum ); \
	if [ "$$before" != "$$after" ]; then \
		echo "generated code was out of date (now regenerated; review and commit):"; \
		diff <(echo "$$before") <(echo "$$after") | grep '^[<>]' | awk '{print "  " $$1 " " $$3}' | sort -u -k2; \
		exit 1; fi

.PHONY: lint
lint: tools ## gofmt, go vet, golangci-lint (.golangci.yml) and shellcheck.
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>&1); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags integration ./...
	go vet -tags e2e ./test/e2e/...
	go vet -tags render ./test/render/...
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags integration ./...
	$(GOLANGCI_LINT) run --build-tags e2e ./test/e2e/...
	$(GOLANGCI_LINT) run --build-tags render ./test/render/...
	@command -v shellcheck >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck; }
	shellcheck -x cluster/*.sh cluster/lib/*.sh .ci/run

.PHONY: unit
unit: ## Unit tests (no servers needed).
	go test -count=1 ./...

.PHONY: reviewable
reviewable: check-generated lint unit ## What must be green before every commit.

.PHONY: test
test: ## Unit, render, integration and e2e tests against real servers, and the package build.
	cluster/test.sh

.PHONY: xpkg
xpkg: ## Build the provider and configuration packages (.xpkg) under _output/xpkg.
	cluster/xpkg.sh
	cluster/xpkg.sh configuration

.PHONY: e2e
e2e: ## End-to-end tests: both packages installed by a real Crossplane, claims applied.
	cluster/tools.sh kube
	cluster/openstack.sh up
	cluster/e2e-run.sh

.PHONY: dev
dev: ## OpenStack + Crossplane up, both packages installed, examples and claims Ready.
	cluster/dev.sh up

.PHONY: dev-down
dev-down: ## Stop what `make dev` started (data is kept; `cluster/dev.sh down --purge` deletes it).
	cluster/dev.sh down

.PHONY: test-bed
test-bed: ## Only bring the real servers up (for running tests by hand).
	cluster/tools.sh kube
	cluster/openstack.sh up

.PHONY: bench
bench: ## Benchmarks against the real servers; ratios to a floor measured in the same run.
	cluster/tools.sh kube
	cluster/openstack.sh up
	cluster/tools.sh etcd@v3.6.16
	source "$$(cluster/openstack.sh env)" && ETCD_BINARIES_DIR=$$(dirname "$$(cluster/tools.sh path etcd@v3.6.16)") \
		go test -tags integration -run '^$$' -bench Observe -benchtime 50x ./internal/...
	$(MAKE) bench-backup BENCH_BACKUP_MIB=64 BENCH_BACKUP_TIMES=3x
	$(MAKE) bench-scale

.PHONY: bench-scale
bench-scale: ## SecurityGroups, attachments and Buckets at scale against the floor (BENCH_SCALE_N, _ATTACHMENTS, _BUCKETS): _output/bench/scale.json.
	cluster/tools.sh kube
	cluster/bench-scale.sh

.PHONY: bench-backup
bench-backup: ## An etcd backup and restore (1 GiB unless BENCH_BACKUP_MIB says) next to etcdctl/etcdutl and a plain upload/download.
	cluster/tools.sh etcd@v3.6.16 versitygw
	cluster/versitygw.sh up
	source "$$(cluster/versitygw.sh env)" && BENCH_BACKUP_MIB=$${BENCH_BACKUP_MIB:-1024} \
		ETCD_BINARIES_DIR=$$(dirname "$$(cluster/tools.sh path etcd@v3.6.16)") \
		go test -tags integration -run '^$$' -bench BackupRestore -benchtime $${BENCH_BACKUP_TIMES:-1x} -timeout 60m \
		./internal/controller/etcd/etcdcluster/
