package peer

import "sync/atomic"

// Traffic counts frames and their bytes, the 4-byte size prefix and the
// request or response header included (what the socket carries, less
// TCP's own overhead).
type Traffic struct {
	Frames, Bytes uint64
}

// Counts is one direction's traffic: handshakes (the first frame of every
// connection and its answer), the message channel's frames by api key,
// and the requests or responses of replica connections.
type Counts struct {
	Handshake, Replica Traffic
	Messages           map[int16]Traffic
}

// Stats is what the layer sent and received since it started, over every
// connection it dialed or accepted.
type Stats struct {
	Sent, Received Counts
}

// counters count one kind of frame both ways; frames of any connection
// add to them, so only atomics.
type counters struct {
	sent, received struct{ frames, bytes atomic.Uint64 }
}

// count adds one frame of frameBytes (size prefix included) sent or
// received.
func (c *counters) count(sent bool, frameBytes int) {
	side := &c.received
	if sent {
		side = &c.sent
	}
	side.frames.Add(1)
	side.bytes.Add(uint64(frameBytes))
}

func (c *counters) load() (sent, received Traffic) {
	return Traffic{Frames: c.sent.frames.Load(), Bytes: c.sent.bytes.Load()},
		Traffic{Frames: c.received.frames.Load(), Bytes: c.received.bytes.Load()}
}

// trafficCounters are the layer's own kinds; the message channel's are
// per api key (Layer.messageKeys).
type trafficCounters struct {
	handshake, replica counters
}

func (c *trafficCounters) snapshot(messages map[int16]*counters) Stats {
	st := Stats{Sent: Counts{Messages: map[int16]Traffic{}}, Received: Counts{Messages: map[int16]Traffic{}}}
	st.Sent.Handshake, st.Received.Handshake = c.handshake.load()
	st.Sent.Replica, st.Received.Replica = c.replica.load()
	for k, mc := range messages {
		st.Sent.Messages[k], st.Received.Messages[k] = mc.load()
	}
	return st
}
