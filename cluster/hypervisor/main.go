// Command hypervisor is the test bed's hypervisor: Nova's fake driver records servers, and
// this program runs them. Every ACTIVE server of the local Nova gets a network namespace that
// holds its port's fixed IP and MAC, plugged into a bridge of its subnet that holds the
// gateway address (so the host, and the provider on it, reach the server), and an init that
// runs its #cloud-config user-data and the services it enables, in a private mount namespace
// over a disk of its own. A server that stops (SHUTOFF, ERROR) halts; one deleted in Nova
// loses its disk. While it runs, the rest of the servers' range is unreachable from the host
// (nothing addressed to a server leaves the machine). On exit the hypervisor halts every
// server and removes its bridges and that route: nothing stays on the host. With
// --services-address, servers reach the host's services at one address (see services.go).
//
// Usage:
//
//	hypervisor run --state DIR --image DIR [--services-address A --mirror DIR --forward PORTS]
//	                                           (OS_AUTH_URL, OS_ADMIN_* and OS_REGION_NAME from the env)
//	hypervisor guest ...                       (started by run, inside a server's namespaces)
//	systemctl ...                              (the same binary, inside a server)
//
// It runs only in the test bed, as root, and runs what servers' user-data says: that is the
// provider's own user-data in the tests, never a tenant's.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	var err error
	switch {
	case filepath.Base(os.Args[0]) == "systemctl":
		err = runSystemctl(os.Args[1:])
	case len(os.Args) > 1 && os.Args[1] == "run":
		err = runHypervisor(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "guest":
		err = guestMain(os.Args[2:])
	default:
		err = fmt.Errorf("usage: %s run|guest [flags]", os.Args[0])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}

func guestMain(args []string) error {
	var o guestOptions
	fs := flag.NewFlagSet("guest", flag.ContinueOnError)
	fs.StringVar(&o.Root, "root", "", "the server's disk")
	fs.StringVar(&o.UserData, "user-data", "", "the server's user-data")
	fs.StringVar(&o.Image, "image", "", "the image's files, mounted read-only on "+imageMount)
	fs.StringVar(&o.InstanceID, "instance-id", "", "the server's ID")
	fs.StringVar(&o.Hostname, "hostname", "", "the server's name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Root == "" || o.Image == "" || o.InstanceID == "" {
		return fmt.Errorf("guest needs --root, --image and --instance-id")
	}
	return runGuest(o)
}

func runHypervisor(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	state := fs.String("state", "", "where servers' disks live")
	image := fs.String("image", "", "the image's files (etcd releases), mounted read-only on "+imageMount+" in every server")
	interval := fs.Duration("interval", time.Second, "how often Nova is read")
	svcAddr := fs.String("services-address", "", "the address (in 198.18.0.0/15, outside every server subnet) at which servers reach the host's services; none without it")
	mirror := fs.String("mirror", "", "a directory served over HTTP on the services address (the internal mirror of etcd releases)")
	mirrorPort := fs.Int("mirror-port", 8000, "the mirror's port")
	forwards := fs.String("forward", "", "ports of the services address forwarded to the same port on 127.0.0.1, comma-separated (the object store)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *state == "" || *image == "" {
		return fmt.Errorf("run needs --state and --image")
	}
	ports, err := parsePorts(*forwards)
	if err != nil {
		return fmt.Errorf("--forward: %w", err)
	}
	if (*mirror != "" || len(ports) > 0) && *svcAddr == "" {
		return fmt.Errorf("--mirror and --forward need --services-address")
	}
	log.SetFlags(log.LstdFlags | log.LUTC)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	creds := credentials{
		AuthURL: os.Getenv("OS_AUTH_URL"), Username: os.Getenv("OS_ADMIN_USERNAME"),
		Password: os.Getenv("OS_ADMIN_PASSWORD"), Project: os.Getenv("OS_ADMIN_PROJECT_NAME"),
		Region: os.Getenv("OS_REGION_NAME"),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cl, err := connect(ctx, creds)
	if err != nil {
		return err
	}
	h := &host{dir: *state, image: *image, self: self}
	// Servers of an earlier run that ended without halting them (killed) start afresh, and
	// whatever a killed test bed left on the host goes (see sweepHost).
	for _, id := range h.known() {
		h.halt(context.Background(), id)
	}
	sweepHost()
	if err := holdRange(); err != nil {
		return err
	}
	defer releaseRange()
	if *svcAddr != "" {
		addr, err := netip.ParseAddr(*svcAddr)
		if err != nil {
			return fmt.Errorf("--services-address: %w", err)
		}
		svc := &services{addr: addr, mirror: *mirror, mirrorPort: *mirrorPort, forwards: ports}
		if err := svc.start(ctx); err != nil {
			return err
		}
		defer svc.stop()
	}
	hv := &hypervisor{cloud: cl, host: h, failed: map[string]time.Time{}}
	ready := filepath.Join(*state, "ready")
	defer os.Remove(ready) //nolint:errcheck // Gone with the state dir otherwise.
	t := time.NewTicker(*interval)
	defer t.Stop()
	following := false
	for {
		if err := hv.reconcile(ctx); err != nil {
			log.Printf("%v", err)
		} else if !following {
			if err := os.WriteFile(ready, nil, 0o644); err != nil {
				return err
			}
			following = true
			log.Printf("following Nova")
		}
		select {
		case <-ctx.Done():
			log.Printf("stopping: halting every server")
			for _, id := range h.known() {
				h.halt(context.Background(), id)
			}
			removeBridges()
			return nil
		case <-t.C:
		}
	}
}
