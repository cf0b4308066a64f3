//go:build tools

// Package tools pins the code generators the provider uses. They live in this nested module
// because crossplane-tools raises k8s.io/* beyond what controller-runtime v0.23 accepts in the
// provider's own go.mod.
package tools

import (
	_ "github.com/crossplane/crossplane-tools/cmd/angryjet"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
