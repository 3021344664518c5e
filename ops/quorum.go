package ops

import (
	"fmt"
	"io"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/cluster/quorum"
)

// writeQuorum writes the metadata quorum's figures: the controller epoch
// and how often it changed (an idle cluster holds one epoch: any new one
// is an election), and the CONTROLLER listener's traffic by kind and
// direction, so control-plane bytes and messages per second come from two
// scrapes.
func writeQuorum(w io.Writer, st cluster.QuorumStats) {
	writeFamily(w, "wren_controller_epoch", "gauge", "the controller epoch this node is in")
	fmt.Fprintf(w, "wren_controller_epoch %d\n", st.Epoch)
	writeFamily(w, "wren_controller_elections_total", "counter", "new controller epochs this node saw begin since it started, one per election")
	fmt.Fprintf(w, "wren_controller_elections_total %d\n", st.EpochChanges)
	writeFamily(w, "wren_controller_election_attempts_total", "counter", "this node's turns as pre-candidate (stage pre-vote) and as candidate of a new epoch (stage vote)")
	fmt.Fprintf(w, "wren_controller_election_attempts_total{stage=\"pre-vote\"} %d\n", st.PreVotes)
	fmt.Fprintf(w, "wren_controller_election_attempts_total{stage=\"vote\"} %d\n", st.Candidacies)
	if !st.HasTransport {
		return
	}
	families := []struct {
		name, help string
		value      func(quorum.Traffic) uint64
	}{
		{"wren_quorum_sent_messages_total", "frames this node sent on CONTROLLER listener connections, by kind", func(t quorum.Traffic) uint64 { return t.Frames }},
		{"wren_quorum_sent_bytes_total", "bytes of the frames this node sent on CONTROLLER listener connections (size prefix and header included), by kind", func(t quorum.Traffic) uint64 { return t.Bytes }},
		{"wren_quorum_received_messages_total", "frames this node received on CONTROLLER listener connections, by kind", func(t quorum.Traffic) uint64 { return t.Frames }},
		{"wren_quorum_received_bytes_total", "bytes of the frames this node received on CONTROLLER listener connections (size prefix and header included), by kind", func(t quorum.Traffic) uint64 { return t.Bytes }},
	}
	for i, f := range families {
		side := &st.Transport.Sent
		if i >= 2 {
			side = &st.Transport.Received
		}
		writeFamily(w, f.name, "counter", f.help)
		for _, k := range quorum.Kinds() {
			fmt.Fprintf(w, "%s{kind=%q} %d\n", f.name, k.String(), f.value(side[k]))
		}
	}
}
