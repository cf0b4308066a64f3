//go:build integration

package securitygroup

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/test/bench"
)

// BenchmarkObserve measures one steady-state Observe of a group with many rules against the
// real Neutron, next to its floor: the same GET made directly with net/http and decoded into
// nothing. Both run interleaved in the same loop, so the ratio holds on a noisy machine.
//
//	make bench
func BenchmarkObserve(b *testing.B) {
	for _, rules := range []int{10, 100} {
		b.Run(fmt.Sprintf("rules=%d", rules), func(b *testing.B) { benchmarkObserve(b, rules) })
	}
}

func benchmarkObserve(b *testing.B, n int) {
	ctx := context.Background()
	clouds, err := os.ReadFile(os.Getenv("OS_CLIENT_CONFIG_FILE"))
	if err != nil {
		b.Fatalf("cannot read the test bed's clouds.yaml (run `make bench`): %v", err)
	}
	cloud, err := openstack.ParseCredentials(clouds, openstack.ParseOptions{Cloud: "demo"})
	if err != nil {
		b.Fatal(err)
	}
	var token string
	s, err := openstack.NewSession(ctx, cloud, openstack.SessionOptions{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if t := r.Header.Get("X-Auth-Token"); t != "" {
				token = t
			}
			return rt.RoundTrip(r)
		})
	}})
	if err != nil {
		b.Fatal(err)
	}

	cr := &v1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "bench", UID: "bench-uid"}}
	for p := range n {
		cr.Spec.ForProvider.Rules = append(cr.Spec.ForProvider.Rules, v1alpha1.SecurityGroupRule{
			Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"),
			PortRangeMin: ptr.To(int32(10000 + p)), PortRangeMax: ptr.To(int32(10000 + p)), RemoteIPPrefix: ptr.To("10.0.0.0/8"),
		})
	}
	e := &external{groups: s.SecurityGroups(), ports: s.Ports(), record: event.NewNopRecorder()}
	if _, err := e.Create(ctx, cr); err != nil {
		b.Fatal(err)
	}
	id := meta.GetExternalName(cr)
	defer func() { _ = s.SecurityGroups().DeleteSecurityGroup(ctx, id) }()
	if o, err := e.Observe(ctx, cr); err != nil || !o.ResourceUpToDate {
		b.Fatalf("after create: up to date %v, error %v", o.ResourceUpToDate, err)
	}

	url := os.Getenv("NEUTRON_URL") + "/v2.0/security-groups/" + id
	floor := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("X-Auth-Token", token)
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, rsp.Body)
		_ = rsp.Body.Close()
	}

	bench.AgainstFloor(b, "observe", floor, func() {
		if _, err := e.Observe(ctx, cr); err != nil {
			b.Fatal(err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
