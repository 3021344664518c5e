package peer

import "testing"

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
