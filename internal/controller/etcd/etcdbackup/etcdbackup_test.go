package etcdbackup

import (
	"testing"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
)

func TestMemberToCopy(t *testing.T) {
	m := func(name string, healthy, learner, leader bool) v1alpha1.MemberObservation {
		return v1alpha1.MemberObservation{Name: name, ID: "1" + name, ClientURL: "https://" + name, Healthy: healthy, Learner: learner, Leader: leader}
	}
	cases := map[string]struct {
		members []v1alpha1.MemberObservation
		want    string
		ok      bool
	}{
		"AFollower":        {members: []v1alpha1.MemberObservation{m("a", true, false, true), m("b", true, false, false)}, want: "b", ok: true},
		"NotALearner":      {members: []v1alpha1.MemberObservation{m("a", true, false, true), m("b", true, true, false)}, want: "a", ok: true},
		"NotAnUnhealthy":   {members: []v1alpha1.MemberObservation{m("a", true, false, true), m("b", false, false, false)}, want: "a", ok: true},
		"NotAMachineAlone": {members: []v1alpha1.MemberObservation{{Name: "spare", ClientURL: "https://spare", Healthy: true}}},
		"NobodyHealthy":    {members: []v1alpha1.MemberObservation{m("a", false, false, false)}},
		"NoMembers":        {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := memberToCopy(tc.members)
			if ok != tc.ok || got.Name != tc.want {
				t.Errorf("memberToCopy() = %q, %t; want %q, %t", got.Name, ok, tc.want, tc.ok)
			}
		})
	}
}
