package quorum

import (
	"reflect"
	"testing"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
)

func sampleMessages() []metalog.Message {
	return []metalog.Message{
		{Type: metalog.MsgElection, From: 1, To: 2, Epoch: 3, Election: election.Message{Type: election.MsgVote, From: 1, To: 2,
			Epoch: 3, Log: election.LogPosition{Epoch: 2, Offset: 9}, Reject: true, Quiet: true, EpochTaken: true, LeaseTick: 77}},
		{Type: metalog.MsgFetch, From: 2, To: 1, Epoch: 3, Seq: 5, LastIndex: 10, LastEpoch: 2},
		{Type: metalog.MsgFetchResp, From: 1, To: 2, Epoch: 3, Seq: 5, PrevIndex: 10, PrevEpoch: 2, Commit: 11,
			Entries: []metalog.Entry{{Index: 11, Epoch: 3, Type: metalog.EntryLeaderChange, Data: []byte{}},
				{Index: 12, Epoch: 3, Type: metalog.EntryRecords, Data: []byte(`[{"k":1}]`)}}},
		{Type: metalog.MsgFetchResp, From: 1, To: 3, Epoch: 3, Diverging: true, DivergingIndex: 4, DivergingEpoch: 1},
		{Type: metalog.MsgFetchResp, From: 1, To: 3, Epoch: 3, Snapshot: &metalog.Snapshot{Index: 8, Epoch: 2, Data: []byte("img")}},
	}
}

// Every field survives the round trip.
func TestMessageRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		got, err := DecodeMessage(AppendMessage(nil, m))
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		for i := range got.Entries {
			if len(got.Entries[i].Data) == 0 {
				got.Entries[i].Data = m.Entries[i].Data
			}
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip\n got %#v\nwant %#v", got, m)
		}
	}
}

// Any input either fails to decode or decodes to a message that encodes
// back to exactly the same bytes.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(AppendMessage(nil, m))
	}
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			return
		}
		out := AppendMessage(nil, m)
		if string(out) != string(b) {
			t.Fatalf("decode-encode changed the bytes:\n in %x\nout %x", b, out)
		}
	})
}
