// Command registry serves an in-memory OCI registry over plain HTTP, for the e2e tests: packages
// (.xpkg) are pushed to it and Crossplane core pulls them from it, the way it would from a real
// registry, without Docker or network access.
//
// go-containerregistry names every reference whose registry is 127.0.0.1:<port> or localhost
// insecure and talks plain HTTP to it, so neither the CLI nor core needs extra configuration.
// Everything is lost when the process exits.
//
// Usage:
//
//	registry -addr 127.0.0.1:0 -addr-file /tmp/registry.addr
//
// With port 0 the kernel picks a free port; -addr-file receives the address actually bound
// (host:port), written only once the listener accepts connections, so a caller that waits for
// the file never races another process for the port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	addrFile := flag.String("addr-file", "", "file to write the bound host:port to once listening")
	quiet := flag.Bool("quiet", false, "do not log every request")
	flag.Parse()

	if err := run(*addr, *addrFile, *quiet); err != nil {
		fmt.Fprintf(os.Stderr, "registry: %v\n", err)
		os.Exit(1)
	}
}

func run(addr, addrFile string, quiet bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	bound := l.Addr().String()

	logger := log.New(os.Stderr, "registry: ", log.LstdFlags)
	opts := []registry.Option{registry.Logger(logger)}
	if quiet {
		opts = []registry.Option{registry.Logger(log.New(io.Discard, "", 0))}
	}
	srv := &http.Server{
		Handler:           registry.New(opts...),
		ReadHeaderTimeout: 30 * time.Second,
	}

	if addrFile != "" {
		if err := writeAtomic(addrFile, bound+"\n"); err != nil {
			return fmt.Errorf("cannot write %s: %w", addrFile, err)
		}
	}
	logger.Printf("serving an in-memory OCI registry on http://%s", bound)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// writeAtomic writes data to a temporary file beside path and renames it, so a reader polling
// for path never sees it half written.
func writeAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
