// Package backup takes backups of etcd clusters into S3 buckets and reads them back.
//
// A backup is two objects: the snapshot, streamed from one member through
// Maintenance.Snapshot straight into a multipart upload (memory bounded by a few parts, nothing
// on the provider's disk, etcd's trailing SHA-256 checked as the bytes pass, the upload
// aborted on any error so that no partial or corrupt object is ever committed), and a small
// metadata document next to it (Metadata). Retention and restore read the metadata; nothing
// reads meaning from object names.
//
// Every object a cluster writes carries its owner tag (from the EtcdCluster's UID) in its key,
// and its metadata names the owner: clusters that share a bucket and prefix never prune,
// abort or restore each other's backups by accident.
package backup

import (
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

const (
	errOpen          = "cannot open a snapshot stream"
	errUpload        = "cannot upload the snapshot"
	errEncode        = "cannot encode the backup metadata"
	errPutMetadata   = "cannot store the backup metadata"
	errList          = "cannot list the backups"
	errFmtGet        = "cannot read backup metadata %s"
	errDelete        = "cannot delete backups the retention policy drops"
	errRemove        = "cannot delete the backup's objects"
	errListUploads   = "cannot list unfinished uploads"
	errAbortUpload   = "cannot abort an unfinished upload"
	errFmtSize       = "the stored snapshot has %d bytes, its metadata says %d"
	errFmtChecksum   = "the stored snapshot's SHA-256 is %s, its metadata says %s: the object was changed or damaged"
	errReadSnapshot  = "cannot read the stored snapshot"
	errFmtEncrypted  = "backup %s is encrypted: name an age identity of one of its recipients in spec.forProvider.restore.decryption"
	errDecrypt       = "cannot decrypt the backup with the identity given"
	errFmtNoneBefore = "none of the %d backups in %s/%s was taken before %s"
	errFmtRecipient  = "%s[%d] is not an age recipient: %v"

	// DefaultPartSize is the size of the parts snapshots are uploaded in: the provider holds
	// at most two at once.
	DefaultPartSize = 8 << 20

	// orphanAge is how old a snapshot without metadata must be before it is deleted: younger
	// ones may be a backup between its two writes.
	orphanAge = 10 * time.Minute
)

// A Store is where a cluster's backups go: the objects under a prefix of one bucket.
type Store struct {
	Objects s3.Objects
	Bucket  string
	// Prefix starts every key, and ends with a slash unless empty.
	Prefix string
	// Owner identifies the cluster whose backups these are (its UID). Only objects carrying
	// it are pruned or aborted.
	Owner string
}

// tag is the owner's mark in keys: short enough for keys people read, long enough that
// clusters sharing a prefix do not meet.
func (s Store) tag() string {
	o := strings.ReplaceAll(s.Owner, "-", "")
	return "." + o[:min(len(o), 12)]
}

// Key is the key of the owner's snapshot called name.
func (s Store) Key(name string) string { return s.Prefix + name + s.tag() + snapshotSuffix }

// ours tells whether key is one of the owner's objects; with no owner (a store read to
// restore from), every object under the prefix is.
func (s Store) ours(key string) bool {
	if !strings.HasPrefix(key, s.Prefix) {
		return false
	}
	return s.Owner == "" || strings.HasSuffix(strings.TrimSuffix(key, metadataSuffix), s.tag()+snapshotSuffix)
}

// A Request says what to back up.
type Request struct {
	// Cluster is the EtcdCluster (namespace/name) and ClusterID its etcd cluster ID in hex.
	Cluster, ClusterID string
	// Name, when set, names the backup: its key is the prefix, the name and the owner's tag,
	// the same on every attempt (an on-demand backup). Scheduled backups leave it empty: their
	// keys say when they were taken.
	Name string
	// Member is the name of the member to copy; Open opens its snapshot stream.
	Member string
	Open   func(context.Context) (*etcdclient.Snapshot, error)
	// EtcdVersion is the version the cluster runs.
	EtcdVersion string
	// Recipients, when any, are the age recipients the snapshot is encrypted to as it
	// streams.
	Recipients []age.Recipient
	// PartSize of the upload (0: DefaultPartSize).
	PartSize int64
	// Now is when the backup begins.
	Now time.Time
}

// Take streams a snapshot into the store and writes its metadata. Unfinished uploads of the
// owner (a provider killed mid-upload leaves them) are aborted first: only one backup of a
// cluster runs at a time.
func Take(ctx context.Context, st Store, req Request) (Metadata, error) {
	if err := abortLeftovers(ctx, st); err != nil {
		return Metadata{}, err
	}
	snap, err := req.Open(ctx)
	if err != nil {
		return Metadata{}, errors.Wrap(err, errOpen)
	}
	defer snap.Data.Close() //nolint:errcheck // Read errors are what count; they were returned.

	key := st.Key(req.Name)
	if req.Name == "" {
		key = strings.TrimSuffix(snapshotKey(st.Prefix, req.Now, snap.Revision), snapshotSuffix) + st.tag() + snapshotSuffix
	}
	chk := newChecked(snap.Data)
	var plain io.Reader = chk
	if len(req.Recipients) > 0 {
		enc := encrypting(chk, req.Recipients)
		defer enc.Close() //nolint:errcheck // Stops the encryption when the upload stopped first.
		plain = enc
	}
	stored := newCounted(plain)
	partSize := req.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if _, err := st.Objects.UploadStream(ctx, st.Bucket, key, stored, partSize); err != nil {
		return Metadata{}, errors.Wrap(err, errUpload)
	}
	md := Metadata{
		Format:         formatVersion,
		Key:            key,
		Owner:          st.Owner,
		Cluster:        req.Cluster,
		ClusterID:      req.ClusterID,
		Member:         req.Member,
		MemberID:       strconv.FormatUint(snap.MemberID, 16),
		EtcdVersion:    req.EtcdVersion,
		StorageVersion: snap.Version,
		Revision:       snap.Revision,
		Size:           stored.n,
		SHA256:         stored.sum(),
		SnapshotSHA256: chk.digest(),
		Time:           req.Now.UTC(),
		Encrypted:      len(req.Recipients) > 0,
	}
	b, err := md.encode()
	if err != nil {
		return Metadata{}, errors.Wrap(err, errEncode)
	}
	if err := st.Objects.PutObject(ctx, st.Bucket, MetadataKey(key), b); err != nil {
		// A snapshot without metadata is no backup: take it away rather than leave it to
		// the orphan sweep.
		_ = st.Objects.DeleteObjects(context.WithoutCancel(ctx), st.Bucket, []string{key})
		return Metadata{}, errors.Wrap(err, errPutMetadata)
	}
	return md, nil
}

// abortLeftovers aborts the owner's unfinished uploads under the prefix.
func abortLeftovers(ctx context.Context, st Store) error {
	ups, err := st.Objects.ListUploads(ctx, st.Bucket, st.Prefix)
	if err != nil {
		return errors.Wrap(err, errListUploads)
	}
	for _, u := range ups {
		if st.ours(u.Key) {
			if err := st.Objects.AbortUpload(ctx, st.Bucket, u); err != nil {
				return errors.Wrap(err, errAbortUpload)
			}
		}
	}
	return nil
}

// Describe reads the metadata of the backup whose snapshot is at key.
func Describe(ctx context.Context, st Store, key string) (Metadata, error) {
	return readMetadata(ctx, st, MetadataKey(key))
}

// LatestBefore is the newest backup in the store (of any owner) taken before t.
func LatestBefore(ctx context.Context, st Store, t time.Time) (Metadata, error) {
	all, _, err := List(ctx, st)
	if err != nil {
		return Metadata{}, err
	}
	slices.SortFunc(all, Newer)
	for _, md := range all {
		if md.Time.Before(t) {
			return md, nil
		}
	}
	return Metadata{}, errors.Errorf(errFmtNoneBefore, len(all), st.Bucket, st.Prefix, t.UTC().Format(time.RFC3339))
}

// List reads the metadata of every backup of the owner in the store (of every owner, when
// the store names none). Metadata that cannot be
// read is an error: retention must not drop what it cannot see.
func List(ctx context.Context, st Store) ([]Metadata, []s3.Object, error) {
	objs, err := st.Objects.ListObjects(ctx, st.Bucket, st.Prefix)
	if err != nil {
		return nil, nil, errors.Wrap(err, errList)
	}
	var out []Metadata
	for _, o := range objs {
		if !isMetadataKey(o.Key) || !st.ours(o.Key) {
			continue
		}
		md, err := readMetadata(ctx, st, o.Key)
		if err != nil {
			return nil, nil, err
		}
		if st.Owner == "" || md.Owner == st.Owner {
			out = append(out, md)
		}
	}
	return out, objs, nil
}

func readMetadata(ctx context.Context, st Store, key string) (Metadata, error) {
	r, _, err := st.Objects.GetObject(ctx, st.Bucket, key)
	if err != nil {
		return Metadata{}, errors.Wrapf(err, errFmtGet, key)
	}
	defer r.Close() //nolint:errcheck // Read-only.
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return Metadata{}, errors.Wrapf(err, errFmtGet, key)
	}
	return decodeMetadata(key, b)
}

// Prune applies the policy to the owner's backups: it deletes those the policy drops (both
// objects) and snapshots of the owner that never got their metadata, and returns the backups
// kept, newest first.
func Prune(ctx context.Context, st Store, p Policy, now time.Time) ([]Metadata, error) {
	all, objs, err := List(ctx, st)
	if err != nil {
		return nil, err
	}
	keep, drop := Retain(all, p)
	described := map[string]bool{}
	for _, md := range all {
		described[md.Key] = true
	}
	var keys []string
	for _, md := range drop {
		keys = append(keys, md.Key, MetadataKey(md.Key))
	}
	for _, o := range objs {
		if isSnapshotKey(o.Key) && st.ours(o.Key) && !described[o.Key] && now.Sub(o.LastModified) > orphanAge {
			keys = append(keys, o.Key)
		}
	}
	if len(keys) > 0 {
		if err := st.Objects.DeleteObjects(ctx, st.Bucket, keys); err != nil {
			return nil, errors.Wrap(err, errDelete)
		}
	}
	return keep, nil
}

// Remove deletes a backup's snapshot and metadata, and the owner's unfinished uploads.
func Remove(ctx context.Context, st Store, key string) error {
	if err := abortLeftovers(ctx, st); err != nil {
		return err
	}
	return errors.Wrap(st.Objects.DeleteObjects(ctx, st.Bucket, []string{key, MetadataKey(key)}), errRemove)
}

// ParseRecipients parses age X25519 recipients (age1...); field names them in errors
// (spec.forProvider.backup.encryption.recipients).
func ParseRecipients(field string, recipients []string) ([]age.Recipient, error) {
	out := make([]age.Recipient, 0, len(recipients))
	for i, r := range recipients {
		rc, err := age.ParseX25519Recipient(r)
		if err != nil {
			return nil, errors.Errorf(errFmtRecipient, field, i, err)
		}
		out = append(out, rc)
	}
	return out, nil
}

// encrypting is r encrypted to the recipients, as a reader: the encryption runs in a
// goroutine writing into a pipe. Closing the reader stops it.
func encrypting(r io.Reader, to []age.Recipient) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		w, err := age.Encrypt(pw, to...)
		if err == nil {
			if _, err = io.Copy(w, r); err == nil {
				err = w.Close()
			}
		}
		pw.CloseWithError(err) // nil: the reader sees io.EOF.
	}()
	return pr
}

// Decryptable says whether a backup can be read with the identities given: an encrypted one
// needs at least one (whether it is the right one shows as its first bytes are decrypted).
func Decryptable(md Metadata, ids ...age.Identity) error {
	if md.Encrypted && len(ids) == 0 {
		return errors.Errorf(errFmtEncrypted, md.Key)
	}
	return nil
}

// Check reads a stored snapshot whole and checks its size and checksum against its metadata:
// what a restore does before any member starts. An encrypted backup is decrypted with ids as
// it is read: a wrong identity is found here too.
func Check(ctx context.Context, st Store, md Metadata, ids ...age.Identity) error {
	if err := Decryptable(md, ids...); err != nil {
		return err
	}
	r, _, err := st.Objects.GetObject(ctx, st.Bucket, md.Key)
	if err != nil {
		return errors.Wrap(err, errReadSnapshot)
	}
	defer r.Close() //nolint:errcheck // Read-only.
	c := newCounted(r)
	var plain io.Reader = c
	if md.Encrypted {
		if plain, err = age.Decrypt(c, ids...); err != nil {
			return errors.Wrap(err, errDecrypt)
		}
	}
	// The stored checksum is what counts: the bytes it covers had etcd's own checksum checked
	// when they were stored, and an age file is authenticated as it is decrypted.
	if _, err := io.Copy(io.Discard, plain); err != nil {
		return errors.Wrap(err, errReadSnapshot)
	}
	// What decryption left (nothing, unless something was appended to the object).
	if _, err := io.Copy(io.Discard, c); err != nil {
		return errors.Wrap(err, errReadSnapshot)
	}
	if c.n != md.Size {
		return errors.Errorf(errFmtSize, c.n, md.Size)
	}
	if got := c.sum(); got != md.SHA256 {
		return errors.Errorf(errFmtChecksum, got, md.SHA256)
	}
	return nil
}
