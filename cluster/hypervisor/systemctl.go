package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runSystemctl is the servers' systemctl: enable and disable link units into the
// multi-user target (so the next boot starts them too); start, stop and restart (and
// enable --now) leave a request for the init and wake it. daemon-reload has nothing to do:
// units are read when started.
func runSystemctl(args []string) error {
	now := false
	var verb string
	var units []string
	for _, a := range args {
		switch {
		case a == "--now":
			now = true
		case strings.HasPrefix(a, "-"):
			// --no-block, --quiet, ...: nothing to change here.
		case verb == "":
			verb = a
		default:
			units = append(units, unitName(a))
		}
	}
	switch verb {
	case "daemon-reload":
		return nil
	case "enable":
		for _, u := range units {
			if _, err := os.Stat(filepath.Join(unitDir, u)); err != nil {
				return fmt.Errorf("unit %s: %w", u, err)
			}
			if err := os.MkdirAll(wantsDir, 0o755); err != nil {
				return err
			}
			link := filepath.Join(wantsDir, u)
			if err := os.Symlink(filepath.Join(unitDir, u), link); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
		if now {
			return request("start", units)
		}
		return nil
	case "disable":
		for _, u := range units {
			if err := os.Remove(filepath.Join(wantsDir, u)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if now {
			return request("stop", units)
		}
		return nil
	case "start", "stop", "restart":
		return request(verb, units)
	case "is-active":
		for _, u := range units {
			if !active(u) {
				fmt.Println("inactive")
				os.Exit(3)
			}
		}
		fmt.Println("active")
		return nil
	}
	return fmt.Errorf("systemctl %s: not supported by the test bed's servers", verb)
}

// request leaves one request per unit and signals the init.
func request(verb string, units []string) error {
	for i, u := range units {
		name := fmt.Sprintf("%020d-%03d", time.Now().UnixNano(), i)
		if err := os.WriteFile(filepath.Join(guestRequests, name), []byte(verb+" "+u+"\n"), 0o644); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(filepath.Join(guestRun, "init.pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return err
	}
	return syscall.Kill(pid, syscall.SIGHUP)
}

func active(u string) bool {
	data, err := os.ReadFile(filepath.Join(guestRun, u+".pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return err == nil && syscall.Kill(pid, 0) == nil
}
