package common

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A list holding one object with a bad duration must still decode: an informer that cannot
// decode a list stops every object of the kind, in every namespace (issue 11, finding 2).
func TestABadDurationStillDecodes(t *testing.T) {
	var list struct {
		Items []struct {
			Period *Duration `json:"period"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(`{"items": [{"period": "720h"}, {"period": "30days"}]}`), &list); err != nil {
		t.Fatalf("a list with one bad duration does not decode: %v", err)
	}
	cases := map[string]struct {
		d       Duration
		want    time.Duration
		wantErr bool
	}{
		"Hours":    {d: "720h", want: 720 * time.Hour},
		"Mixed":    {d: "1h30m", want: 90 * time.Minute},
		"Days":     {d: "30days", wantErr: true},
		"Overflow": {d: "99999999999999h", wantErr: true},
		"Empty":    {d: "", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.d.Parse("spec.x")
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q): error %v, want error %v", tc.d, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q): -want, +got:\n%s", tc.d, diff)
			}
		})
	}
}
