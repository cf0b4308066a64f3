package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errFmtNoChecksum = "the snapshot stream ended after %d bytes, which is not a database followed by its SHA-256: it was cut short"
	errChecksum      = "the snapshot's SHA-256 does not match its database: the copy is corrupt"

	// pageMultiple: etcd's database is whole pages, so a snapshot is a multiple of 512 bytes
	// plus the checksum (the test etcdutl applies too).
	pageMultiple = 512
)

// checked passes an etcd snapshot stream through and checks, as the bytes go by, that the
// SHA-256 etcd appends matches the database before it. It returns io.EOF only once the
// checksum matched; a stream cut short or corrupt fails its last read instead, so that whoever
// copies it (an upload) never commits it.
type checked struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	tail []byte // The last sha256.Size bytes read, not hashed yet: they may be the checksum.
	err  error
}

func newChecked(r io.Reader) *checked {
	return &checked{r: r, h: sha256.New(), tail: make([]byte, 0, 2*sha256.Size)}
}

func (c *checked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.consume(p[:n])
	if errors.Is(err, io.EOF) {
		c.err = c.verify()
		return n, c.err
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// consume hashes everything but the last sha256.Size bytes seen.
func (c *checked) consume(b []byte) {
	if len(b) >= sha256.Size {
		c.h.Write(c.tail)
		c.h.Write(b[:len(b)-sha256.Size])
		c.tail = append(c.tail[:0], b[len(b)-sha256.Size:]...)
		return
	}
	c.tail = append(c.tail, b...)
	if over := len(c.tail) - sha256.Size; over > 0 {
		c.h.Write(c.tail[:over])
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
}

func (c *checked) verify() error {
	if c.n < sha256.Size || c.n%pageMultiple != sha256.Size {
		return errors.Errorf(errFmtNoChecksum, c.n)
	}
	if !bytes.Equal(c.h.Sum(nil), c.tail) {
		return errors.New(errChecksum)
	}
	return io.EOF
}

// digest is the checksum etcd sent, once the stream verified.
func (c *checked) digest() string { return hex.EncodeToString(c.tail) }

// counted hashes and counts what passes through it: the bytes that are stored.
type counted struct {
	r io.Reader
	h hash.Hash
	n int64
}

func newCounted(r io.Reader) *counted { return &counted{r: r, h: sha256.New()} }

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func (c *counted) sum() string { return hex.EncodeToString(c.h.Sum(nil)) }
