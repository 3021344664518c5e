package uplink

import (
	"testing"
	"time"
)

// TestUplinkRate: the send rate counts the last ten seconds and forgets
// what is older.
func TestUplinkRate(t *testing.T) {
	var r rate
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 10 {
		for range 5 {
			r.add(t0.Add(time.Duration(i)*time.Second), 100)
		}
	}
	if rec, b := r.perSecond(t0.Add(9 * time.Second)); rec != 5 || b != 500 {
		t.Fatalf("rate over ten full seconds: %v records/s, %v bytes/s, want 5 and 500", rec, b)
	}
	if rec, _ := r.perSecond(t0.Add(14 * time.Second)); rec != 2.5 {
		t.Fatalf("rate five seconds later: %v records/s, want 2.5", rec)
	}
	if rec, b := r.perSecond(t0.Add(60 * time.Second)); rec != 0 || b != 0 {
		t.Fatalf("rate a minute later: %v, %v, want 0", rec, b)
	}
}
