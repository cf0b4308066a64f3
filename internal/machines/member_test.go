package machines

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := MemberConfig{
		Version: "3.6.16", InitialCluster: "m0=https://127.0.2.1:2380", InitialClusterState: "new",
		InitialClusterToken: "t", CA: []byte("ca"), Cert: []byte("cert"), Key: []byte("key"),
	}
	cases := map[string]struct {
		mod     func(*MemberConfig)
		wantErr string
	}{
		"Valid":            {mod: func(*MemberConfig) {}},
		"Existing":         {mod: func(c *MemberConfig) { c.InitialClusterState = "existing" }},
		"NoVersion":        {mod: func(c *MemberConfig) { c.Version = "" }, wantErr: errNoVersion},
		"NoInitialCluster": {mod: func(c *MemberConfig) { c.InitialCluster = "" }, wantErr: errNoInitial},
		"BadState":         {mod: func(c *MemberConfig) { c.InitialClusterState = "New" }, wantErr: fmt.Sprintf(errFmtState, "New")},
		"NoToken":          {mod: func(c *MemberConfig) { c.InitialClusterToken = "" }, wantErr: errNoToken},
		"NoKey":            {mod: func(c *MemberConfig) { c.Key = nil }, wantErr: errNoTLS},
		"NegativeQuota":    {mod: func(c *MemberConfig) { c.QuotaBackendBytes = -1 }, wantErr: errNegativeQuota},
		"Restore": {mod: func(c *MemberConfig) {
			c.Restore = &RestoreSource{URL: "http://s3/b/k?X-Amz-Signature=x", Size: 1, SHA256: strings.Repeat("a", 64)}
		}},
		"RestoreWithoutChecksum": {mod: func(c *MemberConfig) {
			c.Restore = &RestoreSource{URL: "http://s3/b/k", Size: 1}
		}, wantErr: errBadRestore},
		"RestoreIntoAJoin": {mod: func(c *MemberConfig) {
			c.InitialClusterState = "existing"
			c.Restore = &RestoreSource{URL: "http://s3/b/k", Size: 1, SHA256: strings.Repeat("a", 64)}
		}, wantErr: errRestoreJoin},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
}
