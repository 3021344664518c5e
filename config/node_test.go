package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

const sharedFile = `[broker]
log.dirs = ["/var/lib/wren"]

[cluster]
controller.quorum.voters = ["1@edge-1.local:9093", "2@edge-2.local:9093", "3@edge-3.local:9093"]

[node.2.broker]
log.dirs = ["/data/wren"]

[node.3.broker]
listeners = ["PLAINTEXT://10.0.0.3:9000", "CONTROLLER://10.0.0.3:9093"]
`

func localIs(hosts ...string) func(string) bool {
	return func(h string) bool {
		for _, x := range hosts {
			if h == x {
				return true
			}
		}
		return false
	}
}

func TestSharedFileSelectsNode(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		o                     Options
		id                    int32
		logDir                string
		listeners, advertised string
	}{
		{"by --node-id", Options{NodeID: 1, IsLocal: localIs(), Serve: true}, 1, "/var/lib/wren",
			"[PLAINTEXT://0.0.0.0:9092 CONTROLLER://0.0.0.0:9093]", "[PLAINTEXT://edge-1.local:9092]"},
		{"by local address", Options{NodeID: NoNode, IsLocal: localIs("edge-2.local"), Serve: true}, 2, "/data/wren",
			"[PLAINTEXT://0.0.0.0:9092 CONTROLLER://0.0.0.0:9093]", "[PLAINTEXT://edge-2.local:9092]"},
		{"node table listeners win", Options{NodeID: 3, IsLocal: localIs(), Serve: true}, 3, "/var/lib/wren",
			"[PLAINTEXT://10.0.0.3:9000 CONTROLLER://10.0.0.3:9093]", "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseWith("cluster.toml", []byte(sharedFile), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if c.NodeID != tc.id || c.LogDirs[0] != tc.logDir || fmt.Sprint(c.Listeners) != tc.listeners ||
				fmt.Sprint(c.AdvertisedListeners) != tc.advertised {
				t.Fatalf("node %d, log.dirs %v, listeners %v, advertised %v; want %d %s %s %s",
					c.NodeID, c.LogDirs, c.Listeners, c.AdvertisedListeners, tc.id, tc.logDir, tc.listeners, tc.advertised)
			}
		})
	}
}

func TestSharedFileRefused(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		o          Options
		want       string
	}{
		{"no voter local", sharedFile, Options{NodeID: NoNode, IsLocal: localIs(), Serve: true},
			"cluster.toml:5:1: config: this node is not found in controller.quorum.voters: node.id is not set and no voter's host is an address of this host; give --node-id (or WREN_NODE_ID)"},
		{"several voters local", sharedFile, Options{NodeID: NoNode, IsLocal: localIs("edge-1.local", "edge-3.local"), Serve: true},
			"voters 1, 3 are all at addresses of this host; give --node-id"},
		{"id not a voter", sharedFile, Options{NodeID: 7, IsLocal: localIs()}, "node id 7 (given to serve) is not in controller.quorum.voters"},
		{"table of a non-voter", sharedFile + "[node.4.storage]\nlog.segment.bytes = 1048576\n", Options{NodeID: 1},
			"cluster.toml:12:2: table [node.4.*]: node 4 is not a voter (controller.quorum.voters lists node ids 1, 2, 3)"},
		{"table of a non-voter, no node selected", sharedFile + "[node.4.broker]\nlog.dirs = [\"/x\"]\n", Options{NodeID: NoNode},
			"cluster.toml:12:2: table [node.4.*]: node 4 is not a voter"},
		{"bad node table", sharedFile + "[node.two.broker]\n", Options{NodeID: 1},
			"a node's own settings go in [node.N.SECTION], as [node.2.broker]"},
		{"node.id in a node table", sharedFile + "[node.1.broker]\nnode.id = 5\n", Options{NodeID: 1},
			"node.id cannot differ between nodes: set it outside [node.1.*]"},
		{"unknown key in a node table", sharedFile + "[node.1.storage]\nlog.segment.bytez = 5\n", Options{NodeID: 1},
			"did you mean log.segment.bytes?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWith("cluster.toml", []byte(tc.file), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	_, err := ParseWith("cluster.toml", []byte(sharedFile), Options{NodeID: NoNode, IsLocal: localIs(), Serve: true})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%v is not ErrInvalid", err)
	}
}

// Without Serve (config check, dump) a shared file that names no local
// voter keeps the default node.id, as before.
func TestSharedFileCheckedAnywhere(t *testing.T) {
	c, err := ParseWith("cluster.toml", []byte(sharedFile), Options{NodeID: NoNode, IsLocal: localIs()})
	if err != nil || c.NodeID != 1 {
		t.Fatalf("node %v, err %v", c, err)
	}
}

func TestHostIsLocal(t *testing.T) {
	if !hostIsLocal("127.0.0.1") {
		t.Fatal("127.0.0.1 is not local")
	}
	if hostIsLocal("192.0.2.1") { // TEST-NET-1, never assigned
		t.Fatal("192.0.2.1 is local")
	}
}

// The error for a node table of a non-voter names the key and the line,
// as every other config error does.
func TestNodeTableOfNonVoterError(t *testing.T) {
	_, err := ParseWith("cluster.toml", []byte(sharedFile+"[node.4.storage]\nlog.segment.bytes = 1048576\n"), Options{NodeID: NoNode})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("got %v, want one error", err)
	}
	if e := errs[0]; e.Key != "controller.quorum.voters" || e.Pos != (Position{Line: 12, Column: 2}) {
		t.Fatalf("error %+v: want key controller.quorum.voters at 12:2", e)
	}
}

// Two voters, or any even number, are valid but warned about: a majority
// of two is both, and four voters survive no more failures than three.
// One voter (a single node) and odd numbers are not.
func TestVoterCountWarnings(t *testing.T) {
	for _, tc := range []struct {
		voters int
		want   string // "" for no warning
	}{
		{1, ""},
		{2, "cluster.toml:2:1: warning: controller.quorum.voters lists 2 voters: a majority is 2, so the cluster stops when either one is down"},
		{3, ""},
		{4, "cluster.toml:2:1: warning: controller.quorum.voters lists 4 voters: a majority is 3, so the cluster stops once 2 of them are down, as with 3 voters, which survive the same 1 failure(s)"},
		{5, ""},
		{6, "lists 6 voters: a majority is 4"},
	} {
		var vs []string
		for i := 1; i <= tc.voters; i++ {
			vs = append(vs, fmt.Sprintf("%q", fmt.Sprintf("%d@192.0.2.%d:9093", i, i)))
		}
		file := "[cluster]\ncontroller.quorum.voters = [" + strings.Join(vs, ", ") + "]\n"
		c, err := ParseWith("cluster.toml", []byte(file), Options{NodeID: 1})
		if err != nil {
			t.Fatalf("%d voters: %v", tc.voters, err)
		}
		var got []string
		for _, w := range c.Warnings() {
			got = append(got, w.String())
		}
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%d voters: warnings %q, want none", tc.voters, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%d voters: warnings %q, want one containing %q", tc.voters, got, tc.want)
		}
	}
}

// LoadNode is serve's way to find the node, shared by every command that
// acts on one node: --node-id applies the node's tables; no file means
// the defaults, which have node 1 only.
func TestLoadNode(t *testing.T) {
	path := t.TempDir() + "/cluster.toml"
	if err := os.WriteFile(path, []byte(sharedFile), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadNode(path, 2)
	if err != nil || c.NodeID != 2 || c.LogDirs[0] != "/data/wren" {
		t.Fatalf("node 2 of the shared file: %v, %v", c, err)
	}
	if _, err := LoadNode(path, 7); err == nil || !strings.Contains(err.Error(), "node id 7") {
		t.Fatalf("node 7 of the shared file: %v", err)
	}
	if c, err := LoadNode("", NoNode); err != nil || c.NodeID != 1 {
		t.Fatalf("the defaults: %v, %v", c, err)
	}
	if _, err := LoadNode("", 2); err == nil || !strings.Contains(err.Error(), "node id 2 needs a config file") {
		t.Fatalf("node 2 without a file: %v", err)
	}
}
