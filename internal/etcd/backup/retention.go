package backup

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// A Policy says which backups to keep, with the "forget" semantics of restic and borg: the
// newest KeepLast backups, plus the newest backup of each of the KeepHourly newest hours (of
// KeepDaily days, of KeepWeekly ISO weeks) that have one. A backup any rule keeps is kept.
type Policy struct {
	KeepLast, KeepHourly, KeepDaily, KeepWeekly int
}

// Newer orders backups newest first: by the time each was taken, then by revision (two
// backups in the same millisecond), then by key, so that the order is total. It never
// compares keys as the order of time: a revision that gains a digit sorts wrong as text.
func Newer(a, b Metadata) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Revision, a.Revision); c != 0 {
		return c
	}
	return cmp.Compare(b.Key, a.Key)
}

// Retain splits backups into those the policy keeps and those it drops, both newest first.
// The newest backup is always kept, whatever the policy says.
func Retain(backups []Metadata, p Policy) (keep, drop []Metadata) {
	sorted := slices.Clone(backups)
	slices.SortFunc(sorted, Newer)
	kept := make([]bool, len(sorted))
	if len(sorted) > 0 {
		kept[0] = true
	}
	for i := range sorted {
		if i < p.KeepLast {
			kept[i] = true
		}
	}
	for _, r := range []struct {
		n      int
		period func(time.Time) string
	}{
		{p.KeepHourly, func(t time.Time) string { return t.UTC().Format("2006-01-02T15") }},
		{p.KeepDaily, func(t time.Time) string { return t.UTC().Format("2006-01-02") }},
		{p.KeepWeekly, func(t time.Time) string {
			y, w := t.UTC().ISOWeek()
			return fmt.Sprintf("%d-W%02d", y, w)
		}},
	} {
		seen := map[string]bool{}
		for i, b := range sorted {
			if len(seen) >= r.n {
				break
			}
			if k := r.period(b.Time); !seen[k] {
				seen[k] = true
				kept[i] = true
			}
		}
	}
	for i, b := range sorted {
		if kept[i] {
			keep = append(keep, b)
		} else {
			drop = append(drop, b)
		}
	}
	return keep, drop
}
