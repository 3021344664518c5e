package election

import (
	"strings"
	"testing"
)

func testConfig(id NodeID) Config {
	return Config{ID: id, Voters: []NodeID{1, 2, 3}, HeartbeatTicks: 2, LeaseTicks: 6, ElectionTicks: 10, ElectionJitterTicks: 5, Seed: 1}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" means valid
	}{
		{"ok", func(*Config) {}, ""},
		{"single voter", func(c *Config) { c.Voters = []NodeID{1} }, ""},
		{"no voters", func(c *Config) { c.Voters = nil }, "no voters"},
		{"self missing", func(c *Config) { c.ID = 4 }, "node 4 is not among the voters [1 2 3]"},
		{"duplicate", func(c *Config) { c.Voters = []NodeID{1, 2, 2} }, "voter 2 is listed twice"},
		{"negative voter", func(c *Config) { c.Voters = []NodeID{1, -2} }, "voter id -2 is negative"},
		{"heartbeat zero", func(c *Config) { c.HeartbeatTicks = 0 }, "heartbeat ticks 0 must be at least 1"},
		{"heartbeat = lease", func(c *Config) { c.HeartbeatTicks = 6 }, "heartbeat ticks 6 must be below lease ticks 6"},
		{"lease = election", func(c *Config) { c.LeaseTicks = 10 }, "lease ticks 10 must be below election ticks 10"},
		{"lease > election", func(c *Config) { c.LeaseTicks = 12 }, "lease ticks 12 must be below election ticks 10"},
		{"no jitter", func(c *Config) { c.ElectionJitterTicks = 0 }, "election jitter ticks 0 must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(1)
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, nerr := NewNode(c, HardState{VotedFor: None}); (nerr == nil) != (err == nil) {
				t.Fatalf("NewNode error %v disagrees with Validate error %v", nerr, err)
			}
		})
	}
}

func TestNewNodeRejectsBadHardState(t *testing.T) {
	if _, err := NewNode(testConfig(1), HardState{Epoch: 3, VotedFor: 9}); err == nil || !strings.Contains(err.Error(), "stored vote for 9") {
		t.Fatalf("got %v", err)
	}
	if _, err := NewNode(testConfig(1), HardState{Epoch: -1, VotedFor: None}); err == nil {
		t.Fatal("negative epoch accepted")
	}
}

// The Ready contract: the hard state that makes a vote count travels in the
// same Ready as the vote, and Advance drops exactly what was handed out.
func TestReadyCarriesVoteWithHardState(t *testing.T) {
	n, err := NewNode(testConfig(1), HardState{VotedFor: None})
	if err != nil {
		t.Fatal(err)
	}
	for range startQuietTicks(testConfig(1)) {
		n.Tick()
	}
	if n.HasReady() {
		n.Advance(n.Ready())
	}
	if err := n.Step(Message{Type: MsgVote, From: 2, To: 1, Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if rd.HardState == nil || *rd.HardState != (HardState{Epoch: 1, VotedFor: 2}) {
		t.Fatalf("hard state %v, want epoch 1 vote 2", rd.HardState)
	}
	if len(rd.Messages) != 1 || rd.Messages[0].Type != MsgVoteResp || rd.Messages[0].Reject {
		t.Fatalf("messages %v, want one granted VoteResp", rd.Messages)
	}
	// A message produced before Advance stays for the next Ready.
	if err := n.Step(Message{Type: MsgVote, From: 3, To: 1, Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	n.Advance(rd)
	rd = n.Ready()
	if rd.HardState != nil || len(rd.Messages) != 1 || !rd.Messages[0].Reject {
		t.Fatalf("second Ready %+v, want only the refusal of 3", rd)
	}
	n.Advance(rd)
	if n.HasReady() {
		t.Fatalf("Ready left after Advance: %+v", n.Ready())
	}
}

func TestSingleVoterActsAlone(t *testing.T) {
	c := testConfig(1)
	c.Voters = []NodeID{1}
	n, err := NewNode(c, HardState{VotedFor: None})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; !n.Acting(); i++ {
		if i == 100 {
			t.Fatalf("a single voter is not acting after 100 ticks: %+v", n.Status())
		}
		n.Tick()
	}
	if st := n.Status(); st.Hard != (HardState{Epoch: 1, VotedFor: 1}) {
		t.Fatalf("hard state %v", st.Hard)
	}
}
