//go:build integration

// Package integration tests the provider's controllers against a real kube-apiserver and the
// real OpenStack services of the local test bed (cluster/). `make test` starts them.
package integration

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stackservices/provider-stackservices/test/harness"
)

// env is shared by all tests; each test works in a namespace of its own.
var env *harness.Env

// poll is short so that drift made by hand is corrected within seconds.
const poll = 2 * time.Second

func TestMain(m *testing.M) {
	start := time.Now()
	e, err := harness.Start(harness.Options{Poll: poll})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: cannot start the integration test bed: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "test bed up in %s\n", time.Since(start).Round(time.Millisecond))
	env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot stop the test bed: %v\n", err)
	}
	os.Exit(code)
}
