package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestQuorumUncleanRestart: three controllers over loopback, a topic of
// RF 3. The broker leading a partition (not the acting controller) stops
// without a clean shutdown and starts again at once, long before its
// session of 10 s could expire. Its new incarnation's registration must
// take it out of every ISR and ELR, elect another ISR member with a higher
// leader epoch, and bump its broker epoch; Registered closes on the
// restarted node once its image holds that registration, it is unfenced
// once it heartbeats caught up, and the old incarnation's heartbeats are
// refused.
func TestQuorumUncleanRestart(t *testing.T) {
	const session = 10 * time.Second
	voters, nodes := listenQuorumNodes(t, 3)
	for _, n := range nodes {
		n.sessionTimeout = session
		n.cleanShutdown = true
	}
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
	}
	defer func() {
		for _, n := range nodes {
			n.c.Close()
		}
	}()
	var ctrl *quorumNode
	pollUntil(t, "an acting controller and every broker registered with its incarnation", 10*time.Second, func() bool {
		for _, n := range nodes {
			select {
			case <-n.c.Registered():
			default:
				return false
			}
			if n.c.Acting() {
				ctrl = n
			}
		}
		return ctrl != nil
	})
	res, err := ctrl.c.CreateTopics(context.Background(), []CreateTopic{{Name: "t", NumPartitions: 3, ReplicationFactor: 3}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create topic: %v %v", err, res[0].Err)
	}
	// The partition led by a broker other than the controller.
	var victim *quorumNode
	var before PartitionImage
	for _, p := range ctrl.c.Image().Topic("t").Partitions {
		if p.Leader != ctrl.id {
			before = p
			victim = nodes[p.Leader-1]
			break
		}
	}
	if victim == nil {
		t.Fatalf("the controller %d leads every partition: %+v", ctrl.id, ctrl.c.Image().Topic("t").Partitions)
	}
	if !slices.Contains(before.ISR, victim.id) {
		t.Fatalf("partition %d: leader %d not in the ISR %v", before.Partition, victim.id, before.ISR)
	}
	old, _ := ctrl.c.Image().Broker(victim.id)

	// A crash: the process goes, its disk keeps only what was synced.
	victim.c.Close()
	addr := voters[election.NodeID(victim.id)]
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken before the restart: %v", addr, err)
	}
	crashed := time.Now()
	victim.ln, victim.fs, victim.cleanShutdown = ln, victim.fs.Crash(vfs.CrashOptions{}), false
	startQuorumNode(t, victim, voters)

	var after PartitionImage
	var reg BrokerImage
	pollUntil(t, fmt.Sprintf("broker %d registered again after its unclean restart", victim.id), 10*time.Second, func() bool {
		reg, _ = ctrl.c.Image().Broker(victim.id)
		return reg.IncarnationID != old.IncarnationID
	})
	if took := time.Since(crashed); took >= session {
		t.Fatalf("the restart took %v, not inside the session of %v: the test proves nothing", took, session)
	}
	after = ctrl.c.Image().Topic("t").Partitions[before.Partition]
	if after.Leader == victim.id || after.Leader == NoLeader || !slices.Contains(before.ISR, after.Leader) {
		t.Fatalf("partition %d after broker %d's unclean restart: leader %d, want another member of the ISR %v", after.Partition, victim.id, after.Leader, before.ISR)
	}
	if after.LeaderEpoch <= before.LeaderEpoch {
		t.Fatalf("partition %d: leader epoch %d after a leader change, was %d", after.Partition, after.LeaderEpoch, before.LeaderEpoch)
	}
	for _, p := range ctrl.c.Image().Topic("t").Partitions {
		if slices.Contains(p.ISR, victim.id) || slices.Contains(p.ELR, victim.id) || p.Leader == victim.id {
			t.Fatalf("partition %d still has broker %d after its unclean restart: leader %d ISR %v ELR %v", p.Partition, victim.id, p.Leader, p.ISR, p.ELR)
		}
	}
	if reg.Epoch <= old.Epoch {
		t.Fatalf("broker %d's epoch %d after its new registration, was %d", victim.id, reg.Epoch, old.Epoch)
	}
	t.Logf("broker %d restarted uncleanly after %v: partition %d leader %d -> %d, epoch %d -> %d, ISR %v -> %v; broker epoch %d -> %d",
		victim.id, time.Since(crashed).Round(time.Millisecond), before.Partition, before.Leader, after.Leader, before.LeaderEpoch, after.LeaderEpoch,
		before.ISR, after.ISR, old.Epoch, reg.Epoch)

	// The restarted node learns of its registration, then is unfenced.
	select {
	case <-victim.c.Registered():
	case <-time.After(10 * time.Second):
		t.Fatalf("broker %d: Registered not closed 10 s after the controller registered it", victim.id)
	}
	pollUntil(t, fmt.Sprintf("broker %d unfenced", victim.id), 10*time.Second, func() bool {
		b, _ := ctrl.c.Image().Broker(victim.id)
		return !b.Fenced && b.IncarnationID == reg.IncarnationID
	})
	// A heartbeat of the old incarnation (a process that was paused, not
	// dead) is refused by the controller: it is not what it heard.
	oldReg := BrokerRegistrationRecord{BrokerID: victim.id, IncarnationID: old.IncarnationID, Listeners: old.Listeners}
	body, _ := json.Marshal(appMessage{Kind: appHeartbeat, Registration: &oldReg, BrokerEpoch: old.Epoch})
	ctrl.c.HandleApp(election.NodeID(victim.id), body)
	if h := ctrl.c.heardBrokers()[victim.id]; h.Registration.IncarnationID != reg.IncarnationID {
		t.Fatalf("the controller took a heartbeat of broker %d's old incarnation %s (epoch %d): it heard incarnation %s",
			victim.id, old.IncarnationID, old.Epoch, h.Registration.IncarnationID)
	}
}

// TestBrokerRegistrationRecordCompat: a registration written before
// incarnations existed decodes with none (and replays as before), and a
// new one keeps its incarnation and flush policy through the metadata
// log's encoding; a registration without them writes neither key.
func TestBrokerRegistrationRecordCompat(t *testing.T) {
	old := []byte(`{"kind":"broker_registration","broker_registration":{"broker_id":2,"listeners":[{"name":"PLAINTEXT","host":"h","port":9092}],"fenced":false}}`)
	r, err := decodeRecord(old)
	if err != nil {
		t.Fatalf("a registration record of an older version: %v", err)
	}
	if reg := r.BrokerRegistration; reg.IncarnationID != (UUID{}) || reg.AcksDurable || reg.BrokerID != 2 {
		t.Fatalf("an older registration decoded as %+v", reg)
	}
	b, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(old) {
		t.Fatalf("a registration without an incarnation encodes as\n%s\nwant\n%s", b, old)
	}
	inc := NewUUID()
	r.BrokerRegistration.IncarnationID, r.BrokerRegistration.AcksDurable = inc, true
	if b, err = encodeRecord(r); err != nil {
		t.Fatal(err)
	}
	back, err := decodeRecord(b)
	if err != nil || back.BrokerRegistration.IncarnationID != inc || !back.BrokerRegistration.AcksDurable {
		t.Fatalf("a registration with incarnation %s round trips as %+v (%v): %s", inc, back.BrokerRegistration, err, b)
	}
}
