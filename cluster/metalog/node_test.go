package metalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/wren-broker/wren/election"
)

func testConfig(id election.NodeID) Config {
	return Config{
		Election: election.Config{ID: id, Voters: []election.NodeID{1, 2, 3}, HeartbeatTicks: 2, LeaseTicks: 6,
			ElectionTicks: 10, ElectionJitterTicks: 5, Seed: 1},
		FetchWaitTicks: 3, FetchTimeoutTicks: 6, MaxFetchEntries: 4, MaxUncommittedEntries: 10,
	}
}

func stored() Stored {
	return Stored{Hard: HardState{Election: election.HardState{VotedFor: election.None}}}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.FetchWaitTicks = 0 }, "fetch wait ticks 0"},
		{func(c *Config) { c.FetchTimeoutTicks = 3 }, "must exceed fetch wait ticks"},
		{func(c *Config) { c.MaxFetchEntries = 0 }, "max fetch entries 0"},
		{func(c *Config) { c.MaxUncommittedEntries = 0 }, "max uncommitted entries 0"},
		{func(c *Config) { c.Election.LeaseTicks = 20 }, "lease ticks 20"},
	} {
		cfg := testConfig(1)
		tc.change(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
	}
}

func TestNewNodeRefusesBadDisk(t *testing.T) {
	for name, tc := range map[string]struct {
		st   func(*Stored)
		want string
	}{
		"gap":           {func(s *Stored) { s.Entries = []Entry{{Index: 2, Epoch: 1}} }, "does not follow"},
		"epoch back":    {func(s *Stored) { s.Entries = []Entry{{Index: 1, Epoch: 2}, {Index: 2, Epoch: 1}} }, "does not follow"},
		"commit beyond": {func(s *Stored) { s.Entries = []Entry{{Index: 1, Epoch: 1}}; s.Hard.Commit = 2 }, "beyond the stored log end"},
		"bad snapshot":  {func(s *Stored) { s.Snapshot = Snapshot{Index: 0, Epoch: 3} }, "not valid"},
	} {
		st := stored()
		tc.st(&st)
		if _, err := NewNode(testConfig(1), st); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error with %q, got %v", name, tc.want, err)
		}
	}
}

func TestStepRefusesMalformedFetchAnswers(t *testing.T) {
	n, err := NewNode(testConfig(1), stored())
	if err != nil {
		t.Fatal(err)
	}
	base := Message{Type: MsgFetchResp, From: 3, To: 1, Epoch: 2}
	for name, tc := range map[string]struct {
		m    func(*Message)
		want string
	}{
		"too many": {func(m *Message) {
			for i := range 5 {
				m.Entries = append(m.Entries, Entry{Index: int64(i + 1), Epoch: 1})
			}
		}, "carries 5 entries"},
		"gap":          {func(m *Message) { m.Entries = []Entry{{Index: 2, Epoch: 1}} }, "does not follow"},
		"future epoch": {func(m *Message) { m.Entries = []Entry{{Index: 1, Epoch: 3}} }, "does not follow"},
		"snapshot":     {func(m *Message) { m.Snapshot = &Snapshot{Index: 5, Epoch: 1}; m.Commit = 4 }, "bad snapshot"},
		"negative":     {func(m *Message) { m.Commit = -1 }, "negative index"},
		"not a voter":  {func(m *Message) { m.From = 9 }, "not from a peer voter"},
	} {
		m := base
		tc.m(&m)
		if err := n.Step(m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error with %q, got %v", name, tc.want, err)
		}
	}
	if n.HasReady() {
		t.Fatalf("refused messages changed the node: %+v", n.Ready())
	}
}

func TestProposeAndCompactRefusals(t *testing.T) {
	n, err := NewNode(testConfig(1), stored())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Propose([]byte("x")); !errors.Is(err, ErrNotController) {
		t.Fatalf("a follower proposes: %v", err)
	}
	if err := n.Compact(1, nil); err == nil || !strings.Contains(err.Error(), "at most the applied index 0") {
		t.Fatalf("compact beyond applied: %v", err)
	}
}

// A follower that restarts is caught up only once it applied a commit
// index of the controller's own epoch: a new controller first sends the
// commit index it inherited, which may lack entries its predecessor
// committed.
func TestCaughtUpNeedsCommitOfControllersEpoch(t *testing.T) {
	st := stored()
	st.Hard.Election.Epoch = 1
	st.Entries = []Entry{{Index: 1, Epoch: 1, Type: EntryLeaderChange}, {Index: 2, Epoch: 1, Type: EntryRecords, Data: []byte("a")},
		{Index: 3, Epoch: 1, Type: EntryRecords, Data: []byte("b")}}
	st.Hard.Commit = 1
	n, err := NewNode(testConfig(1), st)
	if err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for n.HasReady() {
			n.Advance(n.Ready())
		}
	}
	drain()
	// Controller 2 of epoch 2 heartbeats: node 1 follows it and fetches.
	hb := election.Message{Type: election.MsgHeartbeat, From: 2, To: 1, Epoch: 2, LeaseTick: 1}
	if err := n.Step(Message{Type: MsgElection, From: 2, To: 1, Epoch: 2, Election: hb}); err != nil {
		t.Fatal(err)
	}
	drain()
	answer := func(seq uint64, prev int64, prevEpoch int32, commit int64, ents ...Entry) {
		t.Helper()
		if err := n.Step(Message{Type: MsgFetchResp, From: 2, To: 1, Epoch: 2, Seq: seq, LastIndex: prev, LastEpoch: prevEpoch,
			PrevIndex: prev, PrevEpoch: prevEpoch, Commit: commit, Entries: ents}); err != nil {
			t.Fatal(err)
		}
		drain()
	}
	// The inherited commit index 3 (an entry of epoch 1).
	answer(1, 3, 1, 3)
	if st := n.Status(); st.Applied != 3 || st.CaughtUp {
		t.Fatalf("after the inherited commit index: applied %d caught up %t, want 3 and false", st.Applied, st.CaughtUp)
	}
	// The controller's leader-change entry, committed.
	answer(2, 3, 1, 4, Entry{Index: 4, Epoch: 2, Type: EntryLeaderChange})
	if st := n.Status(); st.Applied != 4 || !st.CaughtUp {
		t.Fatalf("after the controller's own commit: applied %d caught up %t, want 4 and true", st.Applied, st.CaughtUp)
	}
}

// An answer the controller held for a fetch of this node's previous
// incarnation, delivered after the restart, carries a commit index from
// before the restart: it may extend the log, but the catch-up waits for
// the answer to this incarnation's own fetch.
func TestCaughtUpIgnoresAnswersToAnEarlierIncarnation(t *testing.T) {
	cfg := testConfig(1)
	cfg.FirstFetchSeq = 100
	st := stored()
	st.Hard.Election.Epoch = 1
	st.Entries = []Entry{{Index: 1, Epoch: 1, Type: EntryLeaderChange}, {Index: 2, Epoch: 1, Type: EntryRecords, Data: []byte("a")}}
	st.Hard.Commit = 2
	n, err := NewNode(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for n.HasReady() {
			n.Advance(n.Ready())
		}
	}
	drain()
	hb := election.Message{Type: election.MsgHeartbeat, From: 2, To: 1, Epoch: 1, LeaseTick: 1}
	if err := n.Step(Message{Type: MsgElection, From: 2, To: 1, Epoch: 1, Election: hb}); err != nil {
		t.Fatal(err)
	}
	drain()
	answer := func(seq uint64, prev int64, commit int64, ents ...Entry) {
		t.Helper()
		if err := n.Step(Message{Type: MsgFetchResp, From: 2, To: 1, Epoch: 1, Seq: seq, LastIndex: prev, LastEpoch: 1,
			PrevIndex: prev, PrevEpoch: 1, Commit: commit, Entries: ents}); err != nil {
			t.Fatal(err)
		}
		drain()
	}
	// Held for the previous incarnation's fetch 7: entry 3, commit 2.
	answer(7, 2, 2, Entry{Index: 3, Epoch: 1, Type: EntryRecords, Data: []byte("b")})
	if st := n.Status(); st.LastIndex != 3 || st.CaughtUp {
		t.Fatalf("after an earlier incarnation's answer: last %d caught up %t, want 3 and false", st.LastIndex, st.CaughtUp)
	}
	// The answer to this incarnation's fetch (101): commit 4.
	answer(101, 2, 4, Entry{Index: 3, Epoch: 1, Type: EntryRecords, Data: []byte("b")}, Entry{Index: 4, Epoch: 1, Type: EntryRecords, Data: []byte("c")})
	if st := n.Status(); st.Applied != 4 || !st.CaughtUp {
		t.Fatalf("after this incarnation's answer: applied %d caught up %t, want 4 and true", st.Applied, st.CaughtUp)
	}
}
