package cluster

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/datadriven"
)

// TestLiveness runs testdata/liveness/*.txt against the Liveness core on
// a real Image: the actions a round decides are applied as the broker
// records they stand for, so the next round sees their effect. Times are
// milliseconds on the core's clock. Commands:
//
//	config session=4000 heartbeat=1000 [rebalance=0]   (first, once)
//	brokers 1 2 3              register unfenced brokers (cluster id set)
//	heartbeat B at=T [shutting-down] [catching-up] [port=N]
//	          [incarnation=N [clean] [acks-durable] [epoch=N | registered]]
//	                           incarnation N is UUID{N}; clean: its data
//	                           directory was shut down cleanly; acks-durable:
//	                           log.flush.policy ack; registered:
//	                           it sends the epoch of its registration as
//	                           the image shows it (0 if not registered).
//	                           A stale heartbeat (StaleHeartbeat) is
//	                           refused, as the driver refuses it.
//	          [log-dir=below_floor|failed]
//	                           its log dir takes no writes, and why
//	quorum B at=T              a metadata quorum message from B arrived
//	topic ... | alter-isr ...  as in TestLeaderRules
//	partitions                 every partition's state
//	decide now=T [not-acting]  one round: its actions, applied
//	state                      the registered brokers
func TestLiveness(t *testing.T) {
	datadriven.RunDir(t, "testdata/liveness", func(t *testing.T) func(*datadriven.Cmd) string {
		e := &livenessEnv{t: t, le: &leaderEnv{t: t, im: emptyImage()}, heard: map[int32]BrokerHeard{}}
		return e.handle
	})
}

type livenessEnv struct {
	t     *testing.T
	le    *leaderEnv // its image and commit
	live  *Liveness
	heard map[int32]BrokerHeard
}

func ms(t *testing.T, c *datadriven.Cmd, key string) time.Duration {
	if !c.Has(key) {
		t.Fatalf("%s: %s needs %s=", c.Pos, c.Name, key)
	}
	return time.Duration(c.Int(t, key, 0)) * time.Millisecond
}

func (e *livenessEnv) handle(c *datadriven.Cmd) string {
	if e.live == nil && c.Name != "config" {
		e.t.Fatalf("%s: config first", c.Pos)
	}
	switch c.Name {
	case "config":
		e.live = NewLiveness(LivenessConfig{SessionTimeout: ms(e.t, c, "session"), HeartbeatInterval: ms(e.t, c, "heartbeat"),
			RebalanceInterval: time.Duration(c.Int(e.t, "rebalance", 0)) * time.Millisecond})
		return "ok"
	case "brokers":
		if e.le.im.ClusterID == "" {
			e.le.commit(newClusterRecords())
		}
		for _, id := range ids(e.t, c, strings.Join(c.Args, " ")) {
			e.le.commit([]Record{{Kind: KindBrokerRegistration, BrokerRegistration: &BrokerRegistrationRecord{BrokerID: id,
				Listeners: []BrokerListener{{Name: "PLAINTEXT", Host: "h", Port: 9000 + id}}}}})
		}
		return e.state()
	case "heartbeat":
		id := ids(e.t, c, c.Args[0])[0]
		at := ms(e.t, c, "at")
		port := int32(c.Int(e.t, "port", 9000+int(id)))
		var inc UUID
		inc[0] = byte(c.Int(e.t, "incarnation", 0))
		epoch := uint64(c.Int(e.t, "epoch", 0))
		if b, ok := e.le.im.Broker(id); ok && b.IncarnationID == inc && slices.Contains(c.Args, "registered") {
			epoch = b.Epoch
		}
		if StaleHeartbeat(e.le.im, id, inc, epoch) {
			return fmt.Sprintf("refused (stale: incarnation %d at epoch %d)", inc[0], epoch)
		}
		h := e.heard[id]
		h.Heartbeat, h.HeartbeatSeen = at, true
		h.Registration = BrokerRegistrationRecord{BrokerID: id, IncarnationID: inc, AcksDurable: slices.Contains(c.Args, "acks-durable"),
			Listeners: []BrokerListener{{Name: "PLAINTEXT", Host: "h", Port: port}}}
		h.ShuttingDown = slices.Contains(c.Args, "shutting-down")
		h.CatchingUp = slices.Contains(c.Args, "catching-up")
		h.CleanShutdown = slices.Contains(c.Args, "clean")
		h.BrokerEpoch = epoch
		h.LogDir = BrokerLogDir{}
		if r := c.Str("log-dir", ""); r != "" {
			h.LogDir = BrokerLogDir{Dir: "/data", Offline: true, Reason: r, Detail: "figures at " + c.Str("at", "")}
		}
		e.heard[id] = h
		return "ok"
	case "quorum":
		id := ids(e.t, c, c.Args[0])[0]
		h := e.heard[id]
		h.Quorum, h.QuorumSeen = ms(e.t, c, "at"), true
		e.heard[id] = h
		return "ok"
	case "decide":
		actions := e.live.Decide(ms(e.t, c, "now"), !slices.Contains(c.Args, "not-acting"), e.le.im, e.heard)
		var out []string
		for _, a := range actions {
			line := a.String()
			if a.Kind == ActionFence && a.SilentFor > 0 {
				line += fmt.Sprintf(" silent=%dms", a.SilentFor.Milliseconds())
			}
			out = append(out, line)
			e.apply(a)
		}
		if len(out) == 0 {
			return "no action"
		}
		return strings.Join(out, "\n")
	case "state":
		return e.state()
	case "topic", "alter-isr":
		return e.le.handle(c)
	case "partitions":
		var out []string
		for _, name := range e.le.im.TopicNames() {
			for _, p := range e.le.im.Topic(name).Partitions {
				out = append(out, partitionString(name, p))
			}
		}
		return strings.Join(out, "\n")
	}
	e.t.Fatalf("%s: unknown command %s", c.Pos, c.Name)
	return ""
}

// apply commits the records an action stands for, as the controller
// does: the broker's record with the leader rules' partition changes
// (TestLeaderRules' subject).
func (e *livenessEnv) apply(a LivenessAction) {
	im, cfg := e.le.im, e.le.cfg
	var changes []PartitionChange
	switch a.Kind {
	case ActionClusterID:
		e.le.commit(newClusterRecords())
	case ActionRegister:
		r := a.Registration
		if a.Unclean {
			changes = UncleanShutdownChanges(im, a.Broker, cfg)
		}
		e.le.commit(changeRecords([]Record{{Kind: KindBrokerRegistration, BrokerRegistration: &r}}, changes))
	case ActionFence, ActionControlledShutdown, ActionUnfence:
		if a.Kind == ActionUnfence {
			changes = BrokerUnfencedChanges(im, a.Broker, cfg)
		} else {
			changes = BrokerFencedChanges(im, a.Broker, cfg)
		}
		e.le.commit(changeRecords([]Record{{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: a.Broker, Fenced: a.Kind != ActionUnfence}}}, changes))
	case ActionLogDirOffline, ActionLogDirOnline:
		recs, changes, err := LogDirRecords(im, a.Broker, a.LogDir, cfg)
		if err != nil {
			e.t.Fatalf("%v: %v", a, err)
		}
		e.le.commit(changeRecords(recs, changes))
	}
}

func (e *livenessEnv) state() string {
	var out []string
	for _, b := range e.le.im.Brokers() {
		s := fmt.Sprintf("broker %d port=%d", b.ID, b.Listeners[0].Port)
		if b.Fenced {
			s += " fenced"
		}
		if b.IncarnationID != (UUID{}) {
			s += fmt.Sprintf(" incarnation=%d epoch=%d", b.IncarnationID[0], b.Epoch)
		}
		if b.AcksDurable {
			s += " acks-durable"
		}
		if b.LogDir.Offline {
			s += fmt.Sprintf(" log-dir=%s(%s)", b.LogDir.Reason, b.LogDir.Detail)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "no brokers"
	}
	return strings.Join(out, "\n")
}

// newClusterRecords are the records of a new cluster's first entry: its
// id and its secret.
func newClusterRecords() []Record {
	return []Record{{Kind: KindCluster, Cluster: &ClusterRecord{ClusterID: "test"}},
		{Kind: KindClusterSecret, ClusterSecret: &ClusterSecretRecord{Secret: bytes.Repeat([]byte{1}, ClusterSecretBytes)}}}
}
