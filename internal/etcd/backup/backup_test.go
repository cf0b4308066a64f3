package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// snapshotOf is what etcd sends for a database: its pages and their SHA-256.
func snapshotOf(pages int) []byte {
	db := bytes.Repeat([]byte("etcd-page"), pages*512/9+1)[:pages*512]
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

func TestChecked(t *testing.T) {
	good := snapshotOf(9)
	corrupt := bytes.Clone(good)
	corrupt[700] ^= 1
	badSum := bytes.Clone(good)
	badSum[len(badSum)-1] ^= 1

	cases := map[string]struct {
		stream  []byte
		reader  func(io.Reader) io.Reader
		wantErr string
	}{
		"WholeSnapshot":           {stream: good},
		"ReadAByteAtATime":        {stream: good, reader: iotest.OneByteReader},
		"ReadInHalves":            {stream: good, reader: iotest.HalfReader},
		"CorruptDatabase":         {stream: corrupt, wantErr: errChecksum},
		"CorruptChecksum":         {stream: badSum, wantErr: errChecksum},
		"CutShortWithinAPage":     {stream: good[:1000], wantErr: "cut short"},
		"CutShortOnAPageBoundary": {stream: good[:1024], wantErr: "cut short"},
		"Empty":                   {stream: nil, wantErr: "cut short"},
		"NoChecksum":              {stream: good[:9*512], wantErr: "cut short"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(tc.stream)
			if tc.reader != nil {
				r = tc.reader(r)
			}
			c := newChecked(r)
			got, err := io.ReadAll(c)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ReadAll: %v", err)
				}
				if !bytes.Equal(got, tc.stream) {
					t.Errorf("passed %d bytes on, want the %d of the stream unchanged", len(got), len(tc.stream))
				}
				if sum := sha256.Sum256(tc.stream[:len(tc.stream)-sha256.Size]); c.digest() != hex.EncodeToString(sum[:]) {
					t.Errorf("digest %s, want %x", c.digest(), sum)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ReadAll: %v, want an error with %q", err, tc.wantErr)
			}
			// The error sticks: an upload that reads again never sees a clean end.
			if _, again := c.Read(make([]byte, 1)); again == nil || errors.Is(again, io.EOF) {
				t.Errorf("Read after the error: %v, want the error again", again)
			}
		})
	}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func keys(ms []Metadata) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Key)
	}
	return out
}

func TestRetain(t *testing.T) {
	b := func(key, when string, rev int64) Metadata { return Metadata{Key: key, Time: at(when), Revision: rev} }
	hourly := []Metadata{
		b("a", "2026-11-20T10:05:00Z", 10), b("b", "2026-11-20T10:35:00Z", 11),
		b("c", "2026-11-20T11:05:00Z", 12), b("d", "2026-11-20T11:45:00Z", 13),
		b("e", "2026-11-21T09:00:00Z", 14), b("f", "2026-11-23T09:00:00Z", 15),
		b("g", "2026-11-30T09:00:00Z", 16), b("h", "2026-11-30T09:10:00Z", 17),
	}
	cases := map[string]struct {
		backups []Metadata
		policy  Policy
		keep    []string
		drop    []string
	}{
		"KeepLastThree": {
			backups: []Metadata{b("1", "2026-11-20T10:00:00Z", 1), b("2", "2026-11-20T10:00:05Z", 2), b("3", "2026-11-20T10:00:10Z", 3), b("4", "2026-11-20T10:00:15Z", 4), b("5", "2026-11-20T10:00:20Z", 5)},
			policy:  Policy{KeepLast: 3},
			keep:    []string{"5", "4", "3"},
			drop:    []string{"2", "1"},
		},
		// Names that sort wrong as text (r9 after r10) and the same time: order by revision.
		"RevisionGainsADigit": {
			backups: []Metadata{b("snap-r10", "2026-11-20T10:00:00Z", 10), b("snap-r9", "2026-11-20T10:00:00Z", 9), b("snap-r99", "2026-11-20T09:59:59Z", 99)},
			policy:  Policy{KeepLast: 1},
			keep:    []string{"snap-r10"},
			drop:    []string{"snap-r9", "snap-r99"},
		},
		"NewestAlwaysKept": {
			backups: []Metadata{b("old", "2026-11-20T10:00:00Z", 1), b("new", "2026-11-21T10:00:00Z", 2)},
			policy:  Policy{},
			keep:    []string{"new"},
			drop:    []string{"old"},
		},
		"Hourly": {
			backups: hourly,
			policy:  Policy{KeepLast: 1, KeepHourly: 3},
			// h (last and its hour), e (the 2026-11-21T09 hour), f (2026-11-23T09): three hours.
			keep: []string{"h", "f", "e"},
			drop: []string{"g", "d", "c", "b", "a"},
		},
		"Daily": {
			backups: hourly,
			policy:  Policy{KeepDaily: 4},
			keep:    []string{"h", "f", "e", "d"},
			drop:    []string{"g", "c", "b", "a"},
		},
		"Weekly": {
			backups: hourly,
			// 2026-11-30 is in ISO week 49, 11-23 in 48, 11-20 and 11-21 in 47.
			policy: Policy{KeepWeekly: 3},
			keep:   []string{"h", "f", "e"},
			drop:   []string{"g", "d", "c", "b", "a"},
		},
		"RulesAdd": {
			backups: hourly,
			policy:  Policy{KeepLast: 2, KeepWeekly: 2},
			keep:    []string{"h", "g", "f"},
			drop:    []string{"e", "d", "c", "b", "a"},
		},
		"Nothing": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			keep, drop := Retain(tc.backups, tc.policy)
			if diff := cmp.Diff(tc.keep, keys(keep), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keep (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.drop, keys(drop), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drop (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOwnership(t *testing.T) {
	st := Store{Prefix: "shop/orders/", Owner: "0e5c1f9a-7b2d-4c1e-9f00-123456789abc"}
	key := strings.TrimSuffix(snapshotKey(st.Prefix, at("2026-11-20T10:00:00Z"), 42), snapshotSuffix) + st.tag() + snapshotSuffix
	if want := "shop/orders/20261120T100000.000Z-r42.0e5c1f9a7b2d.snapshot"; key != want {
		t.Errorf("key %q, want %q", key, want)
	}
	other := Store{Prefix: st.Prefix, Owner: "ffffffff-7b2d-4c1e-9f00-123456789abc"}
	for k, want := range map[string]bool{
		key:                      true,
		MetadataKey(key):         true,
		"shop/orders/x.snapshot": false,
		strings.Replace(key, st.tag(), other.tag(), 1): false,
		"elsewhere/" + key[len(st.Prefix):]:            false,
	} {
		if got := st.ours(k); got != want {
			t.Errorf("ours(%q) = %t, want %t", k, got, want)
		}
	}
}

func TestDecodeMetadata(t *testing.T) {
	md := Metadata{Format: formatVersion, Key: "p/a.snapshot", Revision: 7}
	b, err := md.encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeMetadata("p/a.snapshot.json", b); err != nil || got.Revision != 7 {
		t.Errorf("decode: %+v, %v", got, err)
	}
	// Metadata copied next to another snapshot must not describe it.
	if _, err := decodeMetadata("p/b.snapshot.json", b); err == nil {
		t.Error("decode of metadata stored at another key: no error")
	}
	if _, err := decodeMetadata("p/a.snapshot.json", []byte(`{"format": 99, "key": "p/a.snapshot"}`)); err == nil {
		t.Error("decode of an unknown format: no error")
	}
	if _, err := decodeMetadata("p/a.snapshot.json", []byte(`not json`)); err == nil {
		t.Error("decode of garbage: no error")
	}
}
