// Package bench measures an operation of the provider against its floor: the same backend
// calls made directly. The two alternate in one loop, so that their ratio holds on a noisy
// machine where absolute times do not.
package bench

import (
	"testing"
	"time"
)

// AgainstFloor runs floor and then op once per iteration of b, and reports their mean times
// as floor-ns/op and <name>-ns/op, and their ratio as <name>/floor.
func AgainstFloor(b *testing.B, name string, floor, op func()) {
	b.Helper()
	var tFloor, tOp time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		floor()
		t1 := time.Now()
		op()
		tOp += time.Since(t1)
		tFloor += t1.Sub(t0)
	}
	b.ReportMetric(float64(tFloor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(tOp.Nanoseconds())/float64(b.N), name+"-ns/op")
	b.ReportMetric(float64(tOp)/float64(tFloor), name+"/floor")
}
