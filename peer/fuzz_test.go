package peer

import (
	"net/url"
	"testing"
)

// Every field of a handshake survives the round trip.
func TestHandshakeRoundTrip(t *testing.T) {
	h := Handshake{ClusterID: "abc", PeerSetHash: "0011", From: 1, To: 2, ErrorCode: 94, ErrorMessage: "no"}
	if got, err := DecodeHandshake(AppendHandshake(nil, h)); err != nil || got != h {
		t.Fatalf("handshake round trip: %v %v", got, err)
	}
}

// Any input either fails to decode or decodes to a handshake that encodes
// back to exactly the same bytes.
func FuzzDecodeHandshake(f *testing.F) {
	f.Add(AppendHandshake(nil, Handshake{ClusterID: "abc", PeerSetHash: "0011", From: 1, To: 2}))
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHandshake(b)
		if err != nil {
			return
		}
		if out := AppendHandshake(nil, h); string(out) != string(b) {
			t.Fatalf("decode-encode changed the bytes:\n in %x\nout %x", b, out)
		}
	})
}

// A URI SAN names a node only in the form NodeURI writes, and then the
// node it names writes back the same URI.
func FuzzNodeURI(f *testing.F) {
	f.Add("wren://node/3")
	f.Add("wren://node/-1")
	f.Add("wren://node/03")
	f.Add("wren://other/3")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		id, ok := parseNodeURI(u)
		if !ok {
			return
		}
		if id < 0 {
			t.Fatalf("%q names node %d", s, id)
		}
		back, err := url.Parse(NodeURI(id))
		if err != nil {
			t.Fatal(err)
		}
		if again, ok := parseNodeURI(back); !ok || again != id {
			t.Fatalf("%q names node %d; NodeURI(%d) = %s reads back as %d, %v", s, id, id, back, again, ok)
		}
	})
}
