package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// The host's services as servers see them. A real cloud's servers reach an internal mirror
// and the object store by addresses of their network; the test bed's servers reach the
// host's through one address the host takes on a bridge of its own (servicesBridge): a
// mirror of etcd releases served from a directory, and TCP forwards to daemons that listen
// on 127.0.0.1 (the object store). Nothing else of the host is reachable from a server but
// its gateway addresses, and nothing but the servers reaches the services address.

// servicesBridge holds the services address. It has no ports: the address is the host's own,
// reached through each subnet's bridge, whose gateway is every server's default route.
const servicesBridge = "nxsvc0"

// services are the listeners on the services address.
type services struct {
	addr netip.Addr
	// mirror is a directory served read-only over HTTP on mirrorPort.
	mirror     string
	mirrorPort int
	// forwards are ports of the services address forwarded to 127.0.0.1 on the same port.
	forwards []int

	listeners []net.Listener
	wg        sync.WaitGroup
	// cancel ends the forwarded connections (stop).
	cancel context.CancelFunc
}

// fromServer tells whether a connection comes from a server's address: the services
// address is the host's own, which the host would accept from any interface.
func fromServer(remote net.Addr) bool {
	ap, err := netip.ParseAddrPort(remote.String())
	return err == nil && allowed.Contains(ap.Addr().Unmap())
}

// parsePorts reads a comma-separated list of ports.
func parsePorts(s string) ([]int, error) {
	var ports []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var p int
		if _, err := fmt.Sscanf(f, "%d", &p); err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("%q is not a port", f)
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// start takes the services address and listens on it. The address must be in the allowed
// range and outside every server subnet (a subnet overlapping it is refused, as any host
// address is: see ensureBridge).
func (s *services) start(ctx context.Context) error {
	if !allowed.Contains(s.addr) {
		return fmt.Errorf("the services address %s is outside %s", s.addr, allowed)
	}
	removeServices()
	ctx, s.cancel = context.WithCancel(ctx)
	steps := [][]string{
		{"link", "add", servicesBridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(s.addr, s.addr.BitLen()).String(), "dev", servicesBridge},
		{"link", "set", servicesBridge, "up"},
	}
	for _, st := range steps {
		if err := ip(st...); err != nil {
			removeServices()
			return err
		}
	}
	if s.mirror != "" {
		l, err := s.listen(s.mirrorPort)
		if err != nil {
			return err
		}
		files := http.FileServer(http.Dir(s.mirror))
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ap, err := netip.ParseAddrPort(r.RemoteAddr); err != nil || !allowed.Contains(ap.Addr().Unmap()) {
				http.Error(w, "servers only", http.StatusForbidden)
				return
			}
			files.ServeHTTP(w, r)
		})}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, net.ErrClosed) {
				log.Printf("mirror: %v", err)
			}
		}()
		log.Printf("serving %s at http://%s", s.mirror, l.Addr())
	}
	for _, p := range s.forwards {
		l, err := s.listen(p)
		if err != nil {
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			forward(ctx, l, net.JoinHostPort("127.0.0.1", fmt.Sprint(p)), fromServer)
		}()
		log.Printf("forwarding %s to 127.0.0.1:%d", l.Addr(), p)
	}
	return nil
}

func (s *services) listen(port int) (net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(s.addr.String(), fmt.Sprint(port)))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.listeners = append(s.listeners, l)
	return l, nil
}

// stop closes the listeners and the forwarded connections, and gives the address back.
func (s *services) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	for _, l := range s.listeners {
		_ = l.Close()
	}
	s.wg.Wait()
	removeServices()
}

// removeServices deletes the services bridge (of this run, or one a killed run left).
func removeServices() {
	if linkExists(servicesBridge) {
		if err := ip("link", "del", servicesBridge); err != nil {
			log.Printf("%v", err)
		}
	}
}

// forward copies every connection accepted on l from an address allow takes to and from
// target until either side closes, or until ctx is done; others are closed at once.
func forward(ctx context.Context, l net.Listener, target string, allow func(net.Addr) bool) {
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		if !allow(c.RemoteAddr()) {
			_ = c.Close()
			continue
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close() //nolint:errcheck // Closing is all that is left to do.
			d := net.Dialer{Timeout: 5 * time.Second}
			t, err := d.DialContext(ctx, "tcp", target)
			if err != nil {
				log.Printf("forward %s: %v", target, err)
				return
			}
			defer t.Close() //nolint:errcheck // Closing is all that is left to do.
			stop := context.AfterFunc(ctx, func() { _ = c.Close(); _ = t.Close() })
			defer stop()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(t, c); closeWrite(t); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, t); closeWrite(c); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// closeWrite half-closes a TCP connection, so that the other side sees the end of what
// this one sends while its answer still flows.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
