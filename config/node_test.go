package config

import (
	"errors"
	"fmt"
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
			"cluster.toml:12:2: table [node.4.*]: node 4 is not in controller.quorum.voters"},
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
