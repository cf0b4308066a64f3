package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	osclient "github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

// volumes is an in-memory Cinder: a volume is creating for as many lists as readyAfter
// says, then available (or error when fail).
type volumes struct {
	c          *cloud
	vols       []osclient.Volume
	lists      map[string]int
	readyAfter int
	fail       bool
	deleted    []string
}

func (v *volumes) ListVolumesByMetadata(_ context.Context, key, value string) ([]osclient.Volume, error) {
	var out []osclient.Volume
	for i, x := range v.vols {
		if x.Status == "creating" {
			v.lists[x.ID]++
			if v.lists[x.ID] > v.readyAfter {
				v.vols[i].Status = map[bool]string{false: "available", true: "error"}[v.fail]
			}
		}
		if v.vols[i].Metadata[key] == value {
			out = append(out, v.vols[i])
		}
	}
	return out, nil
}

func (v *volumes) CreateVolume(_ context.Context, s osclient.VolumeSettings) (*osclient.Volume, error) {
	x := osclient.Volume{ID: v.c.id("volume"), Name: s.Name, Status: "creating", Size: s.SizeGiB, Metadata: s.Metadata}
	v.vols = append(v.vols, x)
	return &x, nil
}

func (v *volumes) DeleteVolume(_ context.Context, id string) error {
	// As Cinder: only a volume at rest (or failed) can be deleted.
	for _, x := range v.vols {
		if x.ID == id && x.Status != "available" && x.Status != "error" {
			return fmt.Errorf("Invalid volume: Volume status must be available or error, not %s", x.Status)
		}
	}
	v.deleted = append(v.deleted, id)
	v.vols = slices.DeleteFunc(v.vols, func(x osclient.Volume) bool { return x.ID == id })
	return nil
}

// TestBootVolumes: a member's server boots from a volume the backend made from the image,
// with the cluster's identity in its metadata, once Cinder has made it; a volume Cinder
// failed to make is deleted and made again; a volume left after its server is deleted with
// the machine, and shows as a stopped machine until then.
func TestBootVolumes(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		readyAfter int
		fail       bool
		wantErr    string
	}{
		"ReadyAtOnce":    {},
		"ReadyAfterWait": {readyAfter: 3},
		"Failed":         {fail: true, wantErr: "Cinder could not make the boot volume of member db-0 (status error)"},
	} {
		t.Run(name, func(t *testing.T) {
			c := &cloud{vanishAfter: 1}
			v := &volumes{c: c, lists: map[string]int{}, readyAfter: tc.readyAfter, fail: tc.fail}
			b := newBackend(c)
			b.o.Volumes = v
			b.o.Spec.BootVolumeGiB = 20
			if _, err := b.Allocate(ctx, "uid", "db-0"); err != nil {
				t.Fatal(err)
			}
			_, err := b.Start(ctx, "uid", "db-0", memberConfig())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Start: %v, want %q", err, tc.wantErr)
				}
				if len(v.vols) != 0 || len(c.created) != 0 {
					t.Errorf("after a failed volume: %d volumes, %d servers, want none", len(v.vols), len(c.created))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(v.vols) != 1 || len(c.created) != 1 {
				t.Fatalf("%d volumes, %d servers, want one of each", len(v.vols), len(c.created))
			}
			want := osclient.Volume{ID: v.vols[0].ID, Name: "etcd-db-0", Status: "available", Size: 20,
				Metadata: map[string]string{"etcd-cluster": "uid", "etcd-member": "db-0"}}
			if diff := cmp.Diff(want, v.vols[0]); diff != "" {
				t.Errorf("volume: -want, +got:\n%s", diff)
			}
			if got := c.created[0].BootVolumeID; got != v.vols[0].ID {
				t.Errorf("server boots from %q, want the volume %s", got, v.vols[0].ID)
			}

			// The server goes (Nova would take its volume along; here it stays): the volume
			// alone is a stopped machine, and Delete removes it.
			c.servers = nil
			ms, err := b.List(ctx, "uid")
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 1 || ms[0].State != machines.Allocated {
				t.Errorf("machines %+v, want db-0 (its port still there)", ms)
			}
			if err := b.Delete(ctx, "uid", "db-0"); err != nil {
				t.Fatal(err)
			}
			if len(v.vols) != 0 || len(c.ports) != 0 {
				t.Errorf("left after Delete: %d volumes, %d ports", len(v.vols), len(c.ports))
			}
		})
	}
}

// TestAVolumeAloneIsAStoppedMachine: what List shows of a volume whose port and server are
// gone, so that the planner deletes it.
func TestAVolumeAloneIsAStoppedMachine(t *testing.T) {
	c := &cloud{}
	v := &volumes{c: c, lists: map[string]int{}, vols: []osclient.Volume{{ID: "volume-1", Status: "available",
		Metadata: map[string]string{"etcd-cluster": "uid", "etcd-member": "db-4"}}}}
	b := newBackend(c)
	b.o.Volumes = v
	ms, err := b.List(context.Background(), "uid")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%v", ms)
	if len(ms) != 1 || ms[0].Name != "db-4" || ms[0].State != machines.Stopped {
		t.Errorf("List: %s, want db-4 Stopped", got)
	}
	// Still attached (its server's delete not finished in Cinder): Delete says so, and
	// deletes it once Cinder would.
	v.vols[0].Status = "in-use"
	if err := b.Delete(context.Background(), "uid", "db-4"); err == nil || !strings.Contains(err.Error(), "is in-use") || len(v.vols) != 1 {
		t.Errorf("Delete of an in-use volume: %v, %d volumes left; want an error saying so and the volume kept", err, len(v.vols))
	}
	v.vols[0].Status = "available"
	if err := b.Delete(context.Background(), "uid", "db-4"); err != nil || len(v.vols) != 0 {
		t.Errorf("Delete: %v, %d volumes left", err, len(v.vols))
	}
}
