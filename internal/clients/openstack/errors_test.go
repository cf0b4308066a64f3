package openstack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

func TestExplain(t *testing.T) {
	cases := map[string]struct {
		status int
		body   string
		want   string
	}{
		"Neutron": {status: http.StatusConflict, body: `{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['port'].", "detail": ""}}`,
			want: "Conflict: Quota exceeded for resources: ['port']."},
		"Nova": {status: http.StatusForbidden, body: `{"forbidden": {"code": 403, "message": "Quota exceeded for instances: Requested 1, but already used 2 of 2 instances"}}`,
			want: "Forbidden: Quota exceeded for instances: Requested 1, but already used 2 of 2 instances"},
		"NotJSON":   {status: http.StatusBadGateway, body: "<html>proxy</html>", want: "Bad Gateway: <html>proxy</html>"},
		"LongBody":  {status: http.StatusInternalServerError, body: strings.Repeat("x", 400), want: "Internal Server Error: " + strings.Repeat("x", 300) + "..."},
		"TwoFaults": {status: http.StatusBadRequest, body: `{"a": {"message": "one"}, "b": {"message": "two"}}`, want: `Bad Request: {"a": {"message": "one"}, "b": {"message": "two"}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cause := gophercloud.ErrUnexpectedResponseCode{Method: "POST", URL: "http://nova/servers", Actual: tc.status, Body: []byte(tc.body)}
			err := Explain(cause)
			if err.Error() != tc.want {
				t.Errorf("Explain:\n got %q\nwant %q", err.Error(), tc.want)
			}
			// The status still tells what happened.
			if !gophercloud.ResponseCodeIs(err, tc.status) {
				t.Errorf("the explained error does not match status %d", tc.status)
			}
		})
	}
	if Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}
