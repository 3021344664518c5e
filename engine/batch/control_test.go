package batch

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEndTxnMarkerMatchesKmsg: a marker batch as BuildEndTxnMarker writes
// it is a transactional control batch whose one record's key and value
// decode with franz-go's kmsg as the marker, and ReadEndTxnMarker reads
// back what kmsg encodes.
func TestEndTxnMarkerMatchesKmsg(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: -1}, {CoordinatorEpoch: 1 << 30}} {
		b, err := BuildEndTxnMarker(42, 3, m, 1_700_000_000_000)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Validate(b, Limits{Origin: AppendOriginReplication})
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 || h.RecordCount != 1 {
			t.Fatalf("header %+v", h)
		}
		if _, err := Validate(b, Limits{}); err == nil {
			t.Fatal("a client may write a control batch")
		}
		var key kmsg.ControlRecordKey
		var val kmsg.EndTxnMarker
		err = Records(b, Limits{Origin: AppendOriginReplication}, func(r Record) error {
			if err := key.ReadFrom(r.Key); err != nil {
				return err
			}
			return val.ReadFrom(r.Value)
		})
		if err != nil {
			t.Fatal(err)
		}
		wantType := kmsg.ControlRecordKeyTypeAbort
		if m.Commit {
			wantType = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Version != 0 || key.Type != wantType || val.Version != 0 || val.CoordinatorEpoch != m.CoordinatorEpoch {
			t.Fatalf("kmsg reads key %+v value %+v for %+v", key, val, m)
		}
		got, err := ReadEndTxnMarker(b, Limits{})
		if err != nil || got != m {
			t.Fatalf("ReadEndTxnMarker: %+v %v, want %+v", got, err, m)
		}
		kk := kmsg.ControlRecordKey{Type: wantType}
		kv := kmsg.EndTxnMarker{CoordinatorEpoch: m.CoordinatorEpoch}
		if got, err := ParseEndTxnMarker(kk.AppendTo(nil), kv.AppendTo(nil)); err != nil || got != m {
			t.Fatalf("ParseEndTxnMarker of kmsg's bytes: %+v %v", got, err)
		}
	}
	// Another control type (KRaft's leader change is 2), and short fields.
	if _, err := ParseEndTxnMarker([]byte{0, 0, 0, 2}, []byte{0, 0, 0, 0, 0, 0}); !errors.Is(err, ErrNotEndTxnMarker) {
		t.Fatalf("type 2: %v", err)
	}
	if _, err := ParseEndTxnMarker([]byte{0, 0, 0}, nil); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("short key: %v", err)
	}
	if _, err := ParseEndTxnMarker([]byte{0, 0, 0, 1}, []byte{0, 0, 1}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("short value: %v", err)
	}
}
