package backup

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	// snapshotSuffix ends the key of every snapshot object; its metadata object's key is the
	// snapshot's key plus metadataSuffix.
	snapshotSuffix = ".snapshot"
	metadataSuffix = ".json"

	// formatVersion is the version of the metadata document this provider writes.
	formatVersion = 1

	errFmtMetadata       = "cannot read the backup metadata %s"
	errFmtMetadataFormat = "backup metadata %s has format %d, which this provider does not know"
	errFmtMetadataKey    = "backup metadata %s describes %s, not the snapshot next to it"
)

// Metadata describes one backup: it is stored next to the snapshot, so that a listing of the
// bucket says what each backup is without opening it, and retention and restore never guess
// from object names.
type Metadata struct {
	Format int `json:"format"`
	// Key is the snapshot object's key.
	Key string `json:"key"`
	// Owner is the UID of the EtcdCluster that took the backup.
	Owner string `json:"owner"`
	// Cluster is the EtcdCluster the backup is of (namespace/name), ClusterID the etcd cluster
	// ID in hex.
	Cluster   string `json:"cluster"`
	ClusterID string `json:"clusterID"`
	// Member is the member whose database was copied, MemberID its ID in hex.
	Member   string `json:"member"`
	MemberID string `json:"memberID"`
	// EtcdVersion is the version the cluster ran, StorageVersion the database's.
	EtcdVersion    string `json:"etcdVersion"`
	StorageVersion string `json:"storageVersion,omitempty"`
	// Revision is a revision the snapshot holds at least.
	Revision int64 `json:"revision"`
	// Size and SHA256 are the stored object's length and checksum (of the ciphertext when
	// the backup is encrypted).
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// SnapshotSHA256 is the checksum etcd appended to the database, checked while streaming.
	SnapshotSHA256 string `json:"snapshotSHA256"`
	// Time is when the snapshot began.
	Time time.Time `json:"time"`
	// Encrypted backups are age-encrypted to the recipients the cluster's spec named.
	Encrypted bool `json:"encrypted"`
	// Verified is what reading the backup back found, when it was.
	Verified *Verification `json:"verified,omitempty"`
}

// snapshotKey is where a snapshot taken at t at revision rev goes under prefix. The name is
// for people: nothing reads time or revision back from it.
func snapshotKey(prefix string, t time.Time, rev int64) string {
	return fmt.Sprintf("%s%s-r%d%s", prefix, t.UTC().Format("20060102T150405.000Z"), rev, snapshotSuffix)
}

// MetadataKey is the key of a snapshot's metadata object.
func MetadataKey(snapshotKey string) string { return snapshotKey + metadataSuffix }

func isMetadataKey(k string) bool { return strings.HasSuffix(k, snapshotSuffix+metadataSuffix) }

func isSnapshotKey(k string) bool { return strings.HasSuffix(k, snapshotSuffix) }

func (m Metadata) encode() ([]byte, error) { return json.MarshalIndent(m, "", "  ") }

// decodeMetadata reads the metadata stored at key, and checks it describes the snapshot next
// to it (a metadata object copied elsewhere must not point restore at another snapshot).
func decodeMetadata(key string, b []byte) (Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return Metadata{}, errors.Wrapf(err, errFmtMetadata, key)
	}
	if m.Format != formatVersion {
		return Metadata{}, errors.Errorf(errFmtMetadataFormat, key, m.Format)
	}
	if MetadataKey(m.Key) != key {
		return Metadata{}, errors.Errorf(errFmtMetadataKey, key, m.Key)
	}
	return m, nil
}
