// Command pause is the sandbox ("pause") image's only binary for the test bed's node: the
// process that holds a Pod's namespaces while its containers come and go. It waits for
// SIGINT or SIGTERM and, as PID 1 of the Pod, reaps the zombies the kernel hands it. The
// upstream image cannot be pulled here; this one is built from source like every other tool.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
