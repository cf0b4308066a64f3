package openstack

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFaultsToRead(t *testing.T) {
	failed := func(n int) []Server {
		ss := make([]Server, n)
		for i := range ss {
			ss[i] = Server{ID: fmt.Sprint(i), Status: "ERROR"}
		}
		return ss
	}
	withFault := Server{Status: "ERROR"}
	withFault.Fault = &struct {
		Message string `json:"message"`
	}{Message: "No valid host was found."}
	cases := map[string]struct {
		servers []Server
		want    []int
	}{
		"NoneFailed":      {servers: []Server{{Status: "ACTIVE"}, {Status: "BUILD"}}},
		"FailedWithout":   {servers: []Server{{Status: "ACTIVE"}, {Status: "ERROR"}}, want: []int{1}},
		"FaultListed":     {servers: []Server{withFault}},
		"ManyFailedBound": {servers: failed(20), want: []int{0, 1, 2, 3, 4, 5, 6, 7}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, faultsToRead(tc.servers)); diff != "" {
				t.Errorf("faultsToRead: -want +got:\n%s", diff)
			}
		})
	}
}
