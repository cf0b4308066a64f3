package etcdbackup

import (
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
)

// TestRecipientsFor: an EtcdBackup is encrypted to its own recipients, else to its cluster's
// scheduled backups' recipients, else not at all.
func TestRecipientsFor(t *testing.T) {
	own, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	withEnc := func(r ...string) *v1alpha1.Encryption { return &v1alpha1.Encryption{Recipients: r} }
	cases := map[string]struct {
		backup, cluster *v1alpha1.Encryption
		want            string // the recipient used; "" for none
		wantErr         string
	}{
		"Own":          {backup: withEnc(own.Recipient().String()), cluster: withEnc(cluster.Recipient().String()), want: own.Recipient().String()},
		"Cluster's":    {cluster: withEnc(cluster.Recipient().String()), want: cluster.Recipient().String()},
		"None":         {},
		"BadOwn":       {backup: withEnc("age1nope"), wantErr: "spec.forProvider.encryption.recipients[0] is not an age recipient"},
		"BadCluster's": {cluster: withEnc("age1nope"), wantErr: "the cluster's spec.forProvider.backup.encryption.recipients[0]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &v1alpha1.EtcdBackup{Spec: v1alpha1.EtcdBackupSpec{ForProvider: v1alpha1.EtcdBackupParameters{Encryption: tc.backup}}}
			c := &v1alpha1.EtcdCluster{}
			if tc.cluster != nil {
				c.Spec.ForProvider.Backup = &v1alpha1.Backup{Encryption: tc.cluster}
			}
			got, err := recipientsFor(b, c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("%d recipients, want none", len(got))
			case tc.want != "" && (len(got) != 1 || got[0].(*age.X25519Recipient).String() != tc.want):
				t.Errorf("recipients %v, want %s", got, tc.want)
			}
		})
	}
}
