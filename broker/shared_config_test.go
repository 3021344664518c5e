package broker

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/config"
)

// One file for the whole cluster: three nodes start from the same bytes,
// each selected by its node id, with its own listeners and log dir from
// its [node.N.*] tables, and form one cluster.
func TestSharedConfigFile(t *testing.T) {
	ports := freePorts(t, 3)
	dir := t.TempDir()
	var voters []string
	var f strings.Builder
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%q", fmt.Sprintf("%d@127.0.0.1:%d", i+1, p)))
	}
	fmt.Fprintf(&f, `[cluster]
controller.quorum.voters = [%s]
controller.heartbeat.interval.ms = 100
controller.lease.ms = 1500
controller.quorum.fetch.timeout.ms = 2000
controller.quorum.election.backoff.max.ms = 200
broker.heartbeat.interval.ms = 100
broker.session.timeout.ms = 3000
`, strings.Join(voters, ", "))
	for i, p := range ports {
		fmt.Fprintf(&f, `
[node.%[1]d.broker]
log.dirs = [%[2]q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:%[3]d"]
[node.%[1]d.http]
listen = "127.0.0.1:0"
`, i+1, filepath.Join(dir, fmt.Sprintf("data%d", i+1)), p)
	}
	shared := []byte(f.String())
	var brokers []*Broker
	t.Cleanup(func() {
		for _, b := range brokers {
			b.Close()
		}
	})
	for id := int32(1); id <= 3; id++ {
		cfg, err := config.ParseWith("cluster.toml", shared, config.Options{NodeID: id, Serve: true})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.NodeID != id || !strings.HasSuffix(cfg.LogDirs[0], fmt.Sprintf("data%d", id)) {
			t.Fatalf("node %d selected as %d with log.dirs %v", id, cfg.NodeID, cfg.LogDirs)
		}
		b, err := Start(cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		brokers = append(brokers, b)
	}
	pollFor(t, "one controller known to all, three brokers registered", 20*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})
	// Without --node-id, all three voters are at this host's loopback
	// address: serve must be told which one it is.
	_, err := config.ParseWith("cluster.toml", shared, config.Options{NodeID: config.NoNode, Serve: true})
	if err == nil || !strings.Contains(err.Error(), "voters 1, 2, 3 are all at addresses of this host; give --node-id") {
		t.Fatalf("shared file without a node id: %v", err)
	}
}
