package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The guest side: what runs "inside" a server. The host side started this process in the
// server's network namespace and in a private mount namespace, with its console log as
// stdout and stderr. It gives the server its own /etc, /var/lib, /var/log, /run, /opt and /tmp
// (its disk, kept while the server exists), mounts the image's files, runs the user-data as
// cloud-init would and then supervises the enabled services until it is told to stop.

// Directories of the server's own disk, mounted over the host's.
var guestDirs = []string{"/etc", "/var/lib", "/var/log", "/run", "/opt", "/tmp"}

const (
	// guestRun holds the init's PID, the systemctl shim and the requests it leaves for init.
	guestRun      = "/run/testbed"
	guestRequests = guestRun + "/requests"
	// imageMount is where the image's files (the etcd releases) appear in the server.
	imageMount = "/opt/etcd"
	// stopTimeout is how long a service has to exit after TERM before it is killed.
	stopTimeout = 10 * time.Second
)

type guestOptions struct {
	Root, UserData, Image, InstanceID, Hostname string
}

func runGuest(o guestOptions) error {
	log.SetPrefix("testbed-init: ")
	log.SetFlags(log.LstdFlags | log.LUTC)
	// The user-data is read before the disk's mounts: its file lies in the test bed's run
	// directory, which the server's own /tmp hides when the checkout is under /tmp (a fresh
	// clone there booted every server without its user-data).
	cc, userDataErr := readUserData(o.UserData)
	if err := mountDisk(o); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(guestRun, "init.pid"), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
		return err
	}
	// Orphans of the services and scripts come to this process, as to a real init.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a subreaper: %w", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)

	env := guestEnv()
	switch err := userDataErr; {
	case errors.Is(err, errNotCloudConfig), errors.Is(err, os.ErrNotExist):
		log.Printf("no #cloud-config user-data: nothing to run")
	case err != nil:
		log.Printf("user-data: %v", err)
	default:
		firstBoot(o, cc, env)
	}

	s := &supervisor{env: env, running: map[string]*service{}}
	s.startEnabled()
	s.handleRequests()
	for sig := range sigs {
		switch sig {
		case syscall.SIGHUP:
			s.handleRequests()
		case syscall.SIGCHLD:
			s.reap()
		default:
			log.Printf("shutting down")
			s.stopAll()
			return nil
		}
	}
	return nil
}

func readUserData(path string) (*cloudConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCloudConfig(data)
}

// mountDisk puts the server's disk over the host's directories and the image's files in
// place. The mount namespace is private: the host sees none of it.
func mountDisk(o guestOptions) error {
	fresh := false
	if _, err := os.Stat(filepath.Join(o.Root, "etc")); os.IsNotExist(err) {
		fresh = true
	}
	// The image goes onto the disk's /opt first, while its source can still be reached: the
	// test bed's files may live under a directory the server gets its own of (a checkout
	// under /tmp), which the mounts below hide. The disk's directories are then mounted with
	// what is mounted on them.
	image := filepath.Join(o.Root, imageMount)
	if err := os.MkdirAll(image, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(o.Image, image, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("mount the image's files %s on %s: %w", o.Image, imageMount, err)
	}
	if err := syscall.Mount("", image, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", imageMount, err)
	}
	for _, d := range guestDirs {
		src := filepath.Join(o.Root, d)
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		if fresh && d == "/etc" {
			if err := seedEtc(src, o.Hostname); err != nil {
				return err
			}
		}
		if err := syscall.Mount(src, d, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", src, d, err)
		}
	}
	// The shim answers for systemctl: the same binary, called by that name.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := filepath.Join(guestRun, "bin")
	if err := os.MkdirAll(guestRequests, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(bin, "systemctl"))
	return os.Symlink(self, filepath.Join(bin, "systemctl"))
}

// seedEtc gives a new server the few files of /etc that programs look for.
func seedEtc(dir, hostname string) error {
	for _, f := range []string{"passwd", "group", "nsswitch.conf"} {
		data, err := os.ReadFile(filepath.Join("/etc", f))
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			return err
		}
	}
	hosts := fmt.Sprintf("127.0.0.1 localhost\n127.0.1.1 %s\n", hostname)
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(hosts), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "hostname"), []byte(hostname+"\n"), 0o644)
}

func guestEnv() []string {
	return []string{
		"PATH=" + filepath.Join(guestRun, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8",
	}
}

// firstBoot runs bootcmd on every boot, and write_files then runcmd once per instance, as
// cloud-init's modules do.
func firstBoot(o guestOptions, cc *cloudConfig, env []string) {
	if len(cc.BootCmd) > 0 {
		runScript("bootcmd", script(cc.BootCmd), env)
	}
	sem := filepath.Join("/var/lib/cloud/instances", o.InstanceID, "boot-finished")
	if _, err := os.Stat(sem); err == nil {
		log.Printf("instance %s booted before: write_files and runcmd are done", o.InstanceID)
		return
	}
	for _, f := range cc.WriteFiles {
		if err := f.write(); err != nil {
			log.Printf("%v", err)
		}
	}
	if len(cc.RunCmd) > 0 {
		runScript("runcmd", script(cc.RunCmd), env)
	}
	if err := os.MkdirAll(filepath.Dir(sem), 0o755); err == nil {
		_ = os.WriteFile(sem, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
	}
	log.Printf("cloud-init finished")
}

func runScript(name, body string, env []string) {
	path := filepath.Join("/var/lib/cloud", name+".sh")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Printf("%s: %v", name, err)
		return
	}
	if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
		log.Printf("%s: %v", name, err)
		return
	}
	cmd := exec.Command("/bin/sh", path)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, os.Stdout, os.Stderr, "/"
	if err := cmd.Run(); err != nil {
		log.Printf("%s failed: %v", name, err)
	}
}

// A service is a running unit's process.
type service struct {
	unit    *unit
	cmd     *exec.Cmd
	stopped bool
}

// supervisor runs the enabled units and what systemctl asks for.
type supervisor struct {
	env     []string
	running map[string]*service
}

func (s *supervisor) startEnabled() {
	names, err := enabledUnits()
	if err != nil {
		log.Printf("enabled units: %v", err)
	}
	for _, n := range names {
		s.start(n)
	}
}

func (s *supervisor) start(name string) {
	if _, ok := s.running[name]; ok {
		return
	}
	u, err := loadUnit(name)
	if err != nil {
		log.Printf("start %s: %v", name, err)
		return
	}
	cmd := exec.Command(u.ExecStart[0], u.ExecStart[1:]...)
	cmd.Env = append(append([]string{}, s.env...), u.Environment...)
	cmd.Dir = "/"
	if u.WorkingDirectory != "" {
		cmd.Dir = u.WorkingDirectory
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Printf("start %s: %v", name, err)
		return
	}
	log.Printf("started %s (pid %d)", name, cmd.Process.Pid)
	s.running[name] = &service{unit: u, cmd: cmd}
	_ = os.WriteFile(filepath.Join(guestRun, name+".pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
}

// reap collects every exited child: a service is restarted when its unit says so; the
// others (leftovers of the scripts, orphans the subreaper inherits) are only reaped.
func (s *supervisor) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return
		}
		for name, svc := range s.running {
			if svc.cmd.Process.Pid != pid {
				continue
			}
			delete(s.running, name)
			_ = os.Remove(filepath.Join(guestRun, name+".pid"))
			log.Printf("%s exited (%s)", name, describe(ws))
			if !svc.stopped && svc.unit.restarts(ws.Exited() && ws.ExitStatus() == 0) {
				time.Sleep(svc.unit.RestartDelay)
				s.start(name)
			}
		}
	}
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit code %d", ws.ExitStatus())
}

func (s *supervisor) stop(name string) {
	svc, ok := s.running[name]
	if !ok {
		return
	}
	svc.stopped = true
	pid := svc.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(stopTimeout)
	for time.Now().Before(deadline) {
		if p, _ := syscall.Wait4(pid, nil, syscall.WNOHANG, nil); p == pid {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_, _ = syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
	delete(s.running, name)
	_ = os.Remove(filepath.Join(guestRun, name+".pid"))
	log.Printf("stopped %s", name)
}

func (s *supervisor) stopAll() {
	names := make([]string, 0, len(s.running))
	for n := range s.running {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s.stop(n)
	}
}

// handleRequests carries out what the systemctl shim asked for, in the order it asked.
func (s *supervisor) handleRequests() {
	entries, err := os.ReadDir(guestRequests)
	if err != nil {
		return
	}
	for _, e := range entries { // ReadDir sorts by name: the shim's names sort by time.
		path := filepath.Join(guestRequests, e.Name())
		data, err := os.ReadFile(path)
		_ = os.Remove(path)
		if err != nil {
			continue
		}
		verb, name, ok := strings.Cut(strings.TrimSpace(string(data)), " ")
		if !ok {
			continue
		}
		switch verb {
		case "start":
			s.start(name)
		case "stop":
			s.stop(name)
		case "restart":
			s.stop(name)
			s.start(name)
		}
	}
}
