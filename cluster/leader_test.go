package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wren-broker/wren/internal/datadriven"
)

// TestLeaderRules runs testdata/leader/*.txt against the leader rules on
// a real Image: every change goes through its records (JSON and back) and
// Image.apply, and the partition invariants are checked after each
// command. Commands (partition "t-0" unless part=name-N):
//
//	brokers 1 2 3                     register unfenced brokers
//	topic t replicas=1,2,3 [min-isr=2] [unclean=true] [partitions=1]
//	fence B | shutdown B | unfence B  a broker's session expires, it shuts
//	                                  down cleanly, it is back and caught up
//	restart B [unclean]               it registers again (fenced)
//	log-dir B offline [reason=R] | log-dir B online
//	                                  its heartbeats say its log dir takes
//	                                  no writes (R: below_floor, failed) or
//	                                  takes them again (LogDirRecords)
//	movable B                         LogDirMovable
//	rebalance [percent=10]            auto.leader.rebalance's check
//	alter-isr 1 2 [leader= leader-epoch= partition-epoch=]
//	elect preferred|unclean           ElectLeaders
//	set unclean=true                  the topic's config
//	offsets hw=N B=N ...              what the controller heard
//	state | ledger
func TestLeaderRules(t *testing.T) {
	datadriven.RunDir(t, "testdata/leader", func(t *testing.T) func(*datadriven.Cmd) string {
		e := &leaderEnv{t: t, im: emptyImage()}
		return e.handle
	})
}

type leaderEnv struct {
	t       *testing.T
	im      *Image
	cfg     LeaderConfig
	offsets *PartitionOffsets
	out     strings.Builder
	// steps: a command may be several changes of one partition in one
	// record (an ISR change that completes a reassignment bumps the
	// partition epoch twice), so the partition epoch only has to grow.
	steps bool
}

func (e *leaderEnv) printf(format string, args ...any) { fmt.Fprintf(&e.out, format+"\n", args...) }

func ids(t *testing.T, c *datadriven.Cmd, s string) []int32 {
	var out []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q: %v", c.Pos, s, err)
		}
		out = append(out, int32(v))
	}
	return out
}

func (e *leaderEnv) handle(c *datadriven.Cmd) string {
	e.out.Reset()
	before := e.im
	switch c.Name {
	case "brokers":
		for _, id := range ids(e.t, c, strings.Join(c.Args, " ")) {
			e.commit([]Record{{Kind: KindBrokerRegistration, BrokerRegistration: &BrokerRegistrationRecord{BrokerID: id}}})
		}
	case "topic":
		e.topic(c)
	case "fence", "shutdown", "unfence", "restart":
		b := ids(e.t, c, c.Args[0])[0]
		var changes []PartitionChange
		var recs []Record
		switch c.Name {
		case "fence":
			changes = BrokerFencedChanges(e.im, b, e.cfg)
			recs = []Record{{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: b, Fenced: true}}}
		case "shutdown":
			changes = ControlledShutdownChanges(e.im, b, e.cfg)
			recs = []Record{{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: b, Fenced: true}}}
		case "unfence":
			changes = BrokerUnfencedChanges(e.im, b, e.cfg)
			recs = []Record{{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: b, Fenced: false}}}
		case "restart":
			if slices.Contains(c.Args, "unclean") {
				changes = UncleanShutdownChanges(e.im, b, e.cfg)
			}
			recs = []Record{{Kind: KindBrokerRegistration, BrokerRegistration: &BrokerRegistrationRecord{BrokerID: b, Fenced: true}}}
		}
		e.apply(recs, changes)
	case "log-dir":
		b := ids(e.t, c, c.Args[0])[0]
		d := BrokerLogDir{Dir: "/data"}
		if slices.Contains(c.Args, "offline") {
			d.Offline, d.Reason, d.Detail = true, c.Str("reason", LogDirBelowFloor), "figures"
		}
		recs, changes, err := LogDirRecords(e.im, b, d, e.cfg)
		if err != nil {
			e.printf("error: %v", err)
			break
		}
		e.apply(recs, changes)
		bi, _ := e.im.Broker(b)
		e.printf("broker %d log-dir offline=%t reason=%q writable=%t", b, bi.LogDir.Offline, bi.LogDir.Reason, e.im.BrokerWritable(b))
	case "movable":
		e.printf("%t", LogDirMovable(e.im, ids(e.t, c, c.Args[0])[0]))
	case "rebalance":
		e.apply(nil, RebalanceLeadersChanges(e.im, c.Int(e.t, "percent", 10), e.cfg))
	case "alter-isr":
		t, p := e.part(c)
		im := e.im.Topic(t).Partitions[p]
		ch, err := AlterISR(im, int32(c.Int(e.t, "leader", int(im.Leader))), int32(c.Int(e.t, "leader-epoch", int(im.LeaderEpoch))),
			int32(c.Int(e.t, "partition-epoch", int(im.PartitionEpoch))), ids(e.t, c, strings.Join(c.Args, " ")),
			e.im.ElectionContext(e.im.Topic(t), p, e.cfg, nil))
		if err != nil {
			e.printf("error: %v", err)
			break
		}
		ch.TopicID, ch.Topic = e.im.Topic(t).ID, t
		e.apply(nil, []PartitionChange{ch})
	case "elect":
		t, p := e.part(c)
		el := map[string]Election{"preferred": ElectPreferred, "unclean": ElectUnclean}[c.Args[0]]
		ch, err := ElectLeadersChange(e.im, t, p, el, e.cfg)
		if err != nil {
			e.printf("error: %v", err)
			break
		}
		e.apply(nil, []PartitionChange{ch})
	case "set":
		t, _ := e.part(c)
		v := c.Str("unclean", "false")
		e.commit([]Record{{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceTopic, Name: t, Key: "unclean.leader.election.enable", Value: &v}}})
	case "offsets":
		e.offsets = &PartitionOffsets{HighWatermark: int64(c.Int(e.t, "hw", -1)), LogEndOffsets: map[int32]int64{}}
		for _, b := range e.im.Brokers() {
			if v := c.Int(e.t, strconv.Itoa(int(b.ID)), -1); v >= 0 {
				e.offsets.LogEndOffsets[b.ID] = int64(v)
			}
		}
		o := e.offsets
		e.cfg.Offsets = func(UUID, int32) *PartitionOffsets { return o }
	case "state":
		for _, name := range e.im.TopicNames() {
			for _, p := range e.im.Topic(name).Partitions {
				e.printf("%s", partitionString(name, p))
			}
		}
	case "ledger":
		for _, d := range e.im.DataLossLedger() {
			e.printf("%s", ledgerString(d.DataLossRecord))
		}
		if len(e.im.DataLossLedger()) == 0 {
			e.printf("empty")
		}
	default:
		e.t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	e.checkInvariants(c, before)
	return strings.TrimRight(e.out.String(), "\n")
}

func (e *leaderEnv) part(c *datadriven.Cmd) (string, int32) {
	s := c.Str("part", "t-0")
	i := strings.LastIndexByte(s, '-')
	p, err := strconv.Atoi(s[i+1:])
	if err != nil || e.im.Topic(s[:i]) == nil {
		e.t.Fatalf("%s: no partition %q", c.Pos, s)
	}
	return s[:i], int32(p)
}

func (e *leaderEnv) topic(c *datadriven.Cmd) {
	name := c.Args[0]
	id := NewUUID()
	recs := []Record{{Kind: KindTopic, Topic: &TopicRecord{Name: name, ID: id}}}
	for _, kv := range [][2]string{{"min-isr", "min.insync.replicas"}, {"unclean", "unclean.leader.election.enable"}} {
		if c.Has(kv[0]) {
			v := c.Str(kv[0], "")
			recs = append(recs, Record{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceTopic, Name: name, Key: kv[1], Value: &v}})
		}
	}
	replicas := ids(e.t, c, c.Str("replicas", ""))
	for p := range c.Int(e.t, "partitions", 1) {
		recs = append(recs, Record{Kind: KindPartition, Partition: &PartitionRecord{
			TopicID: id, Partition: int32(p), Replicas: replicas, ISR: slices.Clone(replicas), Leader: replicas[0]}})
	}
	e.commit(recs)
	e.printf("%s", partitionString(name, e.im.Topic(name).Partitions[0]))
}

// apply commits recs and the changes' records, printing the changes.
func (e *leaderEnv) apply(recs []Record, changes []PartitionChange) {
	changes = slices.DeleteFunc(changes, func(ch PartitionChange) bool { return !ch.Changed() })
	for _, ch := range changes {
		recs = append(recs, ch.Records()...)
		e.printf("%s", partitionString(ch.Topic, ch.After))
		if ch.DataLoss != nil {
			d := *ch.DataLoss
			d.Topic = ch.Topic
			e.printf("  %s", ledgerString(d))
		}
	}
	if len(changes) == 0 {
		e.printf("no change")
	}
	e.commit(recs)
}

// commit applies recs as the controller does, through their encoding.
func (e *leaderEnv) commit(recs []Record) {
	b, err := json.Marshal(recs)
	if err != nil {
		e.t.Fatal(err)
	}
	decoded, err := decodeEntry(b)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.im, err = applyRecords(e.im, e.im.Offset+1, decoded); err != nil {
		e.t.Fatal(err)
	}
}

func partitionString(topic string, p PartitionImage) string {
	return fmt.Sprintf("%s-%d leader=%d leader-epoch=%d partition-epoch=%d isr=%v elr=%v last-known=%v",
		topic, p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, fmtIDs(p.ISR), fmtIDs(p.ELR), fmtIDs(p.LastKnownELR))
}

func fmtIDs(s []int32) string {
	if len(s) == 0 {
		return "[]"
	}
	return fmt.Sprint(s)
}

func ledgerString(d DataLossRecord) string {
	return fmt.Sprintf("data-loss %s-%d leader-epoch=%d %d -> %d reason=%s previous-isr=%v previous-elr=%v may-lose=[%d,%d)",
		d.Topic, d.Partition, d.LeaderEpoch, d.PreviousLeader, d.NewLeader, d.Reason, fmtIDs(d.PreviousISR), fmtIDs(d.PreviousELR), d.FromOffset, d.ToOffset)
}

// checkInvariants holds the rules to the invariants of PartitionImage
// after every command, and the epochs to their rules.
func (e *leaderEnv) checkInvariants(c *datadriven.Cmd, before *Image) {
	for _, name := range e.im.TopicNames() {
		t := e.im.Topic(name)
		for _, p := range t.Partitions {
			fail := func(format string, args ...any) {
				e.t.Fatalf("%s: %s: %s", c.Pos, partitionString(name, p), fmt.Sprintf(format, args...))
			}
			ctx := e.im.ElectionContext(t, p.Partition, e.cfg, nil)
			if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
				fail("the leader is not in the ISR")
			}
			if p.Leader != NoLeader && len(p.LastKnownELR) > 0 {
				fail("a last known leader while there is a leader")
			}
			if len(p.ISR) >= ctx.MinISR && len(p.ELR) > 0 {
				fail("an ELR with |ISR| >= min.insync.replicas %d", ctx.MinISR)
			}
			for _, r := range append(slices.Clone(p.ISR), p.ELR...) {
				if !slices.Contains(p.Replicas, r) {
					fail("%d is not a replica", r)
				}
				if slices.Contains(p.ISR, r) && slices.Contains(p.ELR, r) {
					fail("%d is in the ISR and the ELR", r)
				}
			}
			old := before.Topic(name)
			if old == nil || int(p.Partition) >= len(old.Partitions) {
				continue
			}
			o := old.Partitions[p.Partition]
			if (o.Leader != p.Leader) != (p.LeaderEpoch == o.LeaderEpoch+1) || p.LeaderEpoch < o.LeaderEpoch {
				fail("leader %d -> %d with leader epoch %d -> %d", o.Leader, p.Leader, o.LeaderEpoch, p.LeaderEpoch)
			}
			changed := o.Leader != p.Leader || !slices.Equal(o.ISR, p.ISR) || !slices.Equal(o.ELR, p.ELR) || !slices.Equal(o.LastKnownELR, p.LastKnownELR) ||
				!slices.Equal(o.Replicas, p.Replicas) || !slices.Equal(o.AddingReplicas, p.AddingReplicas) || !slices.Equal(o.RemovingReplicas, p.RemovingReplicas)
			bumped := p.PartitionEpoch == o.PartitionEpoch+1 || e.steps && p.PartitionEpoch > o.PartitionEpoch
			if changed != bumped || p.PartitionEpoch < o.PartitionEpoch {
				fail("partition epoch %d -> %d (changed: %v)", o.PartitionEpoch, p.PartitionEpoch, changed)
			}
		}
	}
}
