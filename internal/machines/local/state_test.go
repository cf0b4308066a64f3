package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

func TestRecordRoundTrip(t *testing.T) {
	now := time.Date(2025, 11, 22, 13, 44, 5, 123456789, time.UTC)
	cases := map[string]record{
		"Allocated": {
			Cluster: "6f1c2e0a-1b2c-4d5e-8f90-a1b2c3d4e5f6", Name: "orders-0", Address: "127.0.2.1",
			PeerURL: "https://127.0.2.1:2380", ClientURL: "https://127.0.2.1:2379", CreatedAt: now,
		},
		"Started": {
			Cluster: "c", Name: "m1", Address: "127.0.2.2",
			PeerURL: "https://127.0.2.2:2380", ClientURL: "https://127.0.2.2:2379",
			Version: "3.6.16", CreatedAt: now, CertNotAfter: now.Add(90 * 24 * time.Hour),
			PID: 4242, Command: []string{"/bin/etcd", "--name=m1", "--initial-cluster=m0=https://127.0.2.1:2380,m1=https://127.0.2.2:2380"},
			StartedAt: now.Add(time.Minute),
		},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeRecord(dir, want); err != nil {
				t.Fatal(err)
			}
			got, err := readRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("readRecord(writeRecord(r)): -want +got:\n%s", diff)
			}
			fi, err := os.Stat(filepath.Join(dir, recordFile))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("machine.json has mode %v, want 0600", fi.Mode().Perm())
			}
			// Nothing but machine.json is left: the temporary file was renamed.
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("directory holds %d entries after the write, want 1", len(entries))
			}
		})
	}
}

func TestReadRecordMissing(t *testing.T) {
	if _, err := readRecord(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readRecord of an empty directory: %v, want fs.ErrNotExist", err)
	}
}

func TestRecordMachine(t *testing.T) {
	now := time.Now().UTC()
	r := record{
		Cluster: "c", Name: "m", Address: "127.0.2.3", PeerURL: "https://127.0.2.3:2380",
		ClientURL: "https://127.0.2.3:2379", Version: "3.5.35", CreatedAt: now, CertNotAfter: now.Add(time.Hour),
		PID: 1, Command: []string{"etcd"}, StartedAt: now,
	}
	want := machines.Machine{
		Cluster: "c", Name: "m", Address: "127.0.2.3", PeerURL: "https://127.0.2.3:2380",
		ClientURL: "https://127.0.2.3:2379", Version: "3.5.35", State: machines.Stopped, CreatedAt: now, CertNotAfter: now.Add(time.Hour),
	}
	if diff := cmp.Diff(want, r.machine(machines.Stopped)); diff != "" {
		t.Errorf("machine(): -want +got:\n%s", diff)
	}
}

func TestListSkipsWhatIsNotAMachine(t *testing.T) {
	ctx := context.Background()
	b := newUnitBackend(t, Options{Dir: t.TempDir(), BinariesDir: t.TempDir(), AddressRange: testRange(5, 60, 70)})
	for _, n := range []string{"m2", "m0", "m1"} {
		if _, err := b.Allocate(ctx, "c", n); err != nil {
			t.Fatal(err)
		}
	}
	// An allocation interrupted before machine.json was written, and a stray file.
	if err := os.MkdirAll(filepath.Join(b.dir, "c", "half"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "c", "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := b.List(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
		if m.State != machines.Allocated {
			t.Errorf("%s is %s, want Allocated", m.Name, m.State)
		}
	}
	if diff := cmp.Diff([]string{"m0", "m1", "m2"}, names); diff != "" {
		t.Errorf("List: -want +got names:\n%s", diff)
	}
	if ms, err := b.List(ctx, "nobody"); err != nil || len(ms) != 0 {
		t.Errorf("List of a cluster without machines: %v, %v; want none and no error", ms, err)
	}
}
