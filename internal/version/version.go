// Package version holds the provider's version, set at link time.
package version

// Version of the provider; `-ldflags -X` sets it in release builds.
var Version = "v0.0.0-dev"
