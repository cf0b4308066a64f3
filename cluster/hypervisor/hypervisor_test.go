package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCloudConfig(t *testing.T) {
	cases := map[string]struct {
		userData  string
		want      []string // the runcmd script's lines after the shebang
		wantFiles []string
		wantErr   bool
	}{
		"StringsAndLists": {
			userData:  "#cloud-config\nwrite_files:\n  - {path: /etc/a, content: x}\nruncmd:\n  - echo hi > /tmp/x\n  - [systemctl, enable, --now, \"it's.service\"]\n",
			want:      []string{"echo hi > /tmp/x", `'systemctl' 'enable' '--now' 'it'\''s.service'`},
			wantFiles: []string{"/etc/a"},
		},
		"NotCloudConfig": {userData: "#!/bin/sh\necho hi\n", wantErr: true},
		"BadYAML":        {userData: "#cloud-config\nruncmd: [\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cc, err := parseCloudConfig([]byte(tc.userData))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseCloudConfig: error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			lines := strings.Split(strings.TrimSuffix(script(cc.RunCmd), "\n"), "\n")
			if diff := cmp.Diff(tc.want, lines[1:]); diff != "" {
				t.Errorf("runcmd script: -want, +got:\n%s", diff)
			}
			var files []string
			for _, f := range cc.WriteFiles {
				files = append(files, f.Path)
			}
			if diff := cmp.Diff(tc.wantFiles, files); diff != "" {
				t.Errorf("write_files: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		f        writeFile
		want     string
		wantMode os.FileMode
		wantErr  bool
	}{
		"Plain":    {f: writeFile{Content: "hello\n", Permissions: "0600"}, want: "hello\n", wantMode: 0o600},
		"Base64":   {f: writeFile{Content: "aGVsbG8K", Encoding: "b64"}, want: "hello\n", wantMode: 0o644},
		"GzipB64":  {f: writeFile{Content: "H4sIAAAAAAAAA8tIzcnJ5wIAIDA6NgYAAAA=", Encoding: "gz+b64", Permissions: "0640"}, want: "hello\n", wantMode: 0o640},
		"BadMode":  {f: writeFile{Content: "x", Permissions: "rw"}, wantErr: true},
		"Unknown":  {f: writeFile{Content: "x", Encoding: "rot13"}, wantErr: true},
		"Relative": {f: writeFile{Path: "etc/x", Content: "x"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.f.Path == "" {
				tc.f.Path = filepath.Join(dir, name, "sub", "file")
			}
			err := tc.f.write()
			if (err != nil) != tc.wantErr {
				t.Fatalf("write: error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			got, err := os.ReadFile(tc.f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("content: -want, +got:\n%s", diff)
			}
			fi, err := os.Stat(tc.f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.wantMode {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.wantMode)
			}
		})
	}
}

func TestParseUnit(t *testing.T) {
	cases := map[string]struct {
		unit    string
		want    *unit
		wantErr bool
	}{
		"Service": {
			unit: "[Unit]\nDescription=etcd\nExecStart=/bin/ignored\n[Service]\n# comment\nExecStart=/opt/etcd/v3.6.16/etcd --config-file \"/etc/etcd/my conf.yml\"\n" +
				"Environment=\"A=1\" B=2\nRestart=always\nRestartSec=2\nWorkingDirectory=/var/lib/etcd\n[Install]\nWantedBy=multi-user.target\n",
			want: &unit{
				Name: "etcd.service", ExecStart: []string{"/opt/etcd/v3.6.16/etcd", "--config-file", "/etc/etcd/my conf.yml"},
				Environment: []string{"A=1", "B=2"}, WorkingDirectory: "/var/lib/etcd", Restart: "always", RestartDelay: 2 * time.Second,
			},
		},
		"Defaults": {
			unit: "[Service]\nExecStart=/bin/true\n",
			want: &unit{Name: "etcd.service", ExecStart: []string{"/bin/true"}, Restart: "no", RestartDelay: 100 * time.Millisecond},
		},
		"NoExecStart":    {unit: "[Service]\nRestart=always\n", wantErr: true},
		"RelativeBinary": {unit: "[Service]\nExecStart=-etcd\n", wantErr: true},
		"Unterminated":   {unit: "[Service]\nExecStart=/bin/sh -c 'echo\n", wantErr: true},
		"NotKeyValue":    {unit: "[Service]\nExecStart\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseUnit("etcd.service", []byte(tc.unit))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseUnit: error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseUnit: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestRestarts(t *testing.T) {
	cases := []struct {
		restart string
		clean   bool
		want    bool
	}{
		{"always", true, true}, {"always", false, true},
		{"on-failure", true, false}, {"on-failure", false, true},
		{"no", false, false},
	}
	for _, tc := range cases {
		if got := (&unit{Restart: tc.restart}).restarts(tc.clean); got != tc.want {
			t.Errorf("Restart=%s, clean exit %v: restarts %v, want %v", tc.restart, tc.clean, got, tc.want)
		}
	}
}

func TestNICCheck(t *testing.T) {
	n := func(ip, cidr, gw string) nic {
		return nic{IP: netip.MustParseAddr(ip), Subnet: netip.MustParsePrefix(cidr), Gateway: netip.MustParseAddr(gw)}
	}
	cases := map[string]struct {
		nic     nic
		wantErr bool
	}{
		"Benchmarking":   {nic: n("198.19.77.10", "198.19.77.0/24", "198.19.77.1")},
		"PrivateNetwork": {nic: n("10.0.0.10", "10.0.0.0/24", "10.0.0.1"), wantErr: true},
		"WiderThanRange": {nic: n("198.18.0.10", "198.0.0.0/8", "198.18.0.1"), wantErr: true},
		"GatewayOutside": {nic: n("198.19.77.10", "198.19.77.0/24", "198.19.78.1"), wantErr: true},
		"NoGateway":      {nic: nic{IP: netip.MustParseAddr("198.19.77.10"), Subnet: netip.MustParsePrefix("198.19.77.0/24")}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.nic.check(); (err != nil) != tc.wantErr {
				t.Errorf("check: error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestNames(t *testing.T) {
	id := "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	got := []string{netnsName(id), vethName(id), bridgeName(id)}
	want := []string{"nxvm-0f1e2d3c", "nxh-0f1e2d3c", "nxbr-0f1e2d3c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names: -want, +got:\n%s", diff)
	}
	for _, name := range got {
		if len(name) > 15 {
			t.Errorf("%s is longer than an interface name may be", name)
		}
	}
}
