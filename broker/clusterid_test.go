package broker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/config"
)

func metaClusterID(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "cluster.id="); ok {
			return v
		}
	}
	return ""
}

// Three new nodes form a cluster: the first controller creates the
// cluster id and every node writes it into its meta.properties. A node
// whose data directory belongs to another cluster is refused by its
// peers and its directory is left as it was.
func TestClusterIDInDataDirs(t *testing.T) {
	ports := freePorts(t, 3)
	root := t.TempDir()
	dirs := make([]string, 3)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("data%d", i+1))
	}
	// Node 3 brings a directory of another cluster.
	const foreign = "b3RoZXItY2x1c3RlcgAAAA"
	if err := os.MkdirAll(dirs[2], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs[2], "meta.properties"),
		[]byte("cluster.id="+foreign+"\ndirectory.id=ZGlyZWN0b3J5LWlkAAAAAA\nnode.id=3\nversion=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var brokers []*Broker
	t.Cleanup(func() {
		for _, b := range brokers {
			b.Close()
		}
	})
	var node3Log lockedBuffer
	start := func(id int) {
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(quorumConfigText(id, dirs[id-1], ports)))
		if err != nil {
			t.Fatal(err)
		}
		logger := testLogger(t)
		if id == 3 {
			logger = slog.New(slog.NewTextHandler(&node3Log, nil))
		}
		b, err := Start(cfg, Options{Logger: logger})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		brokers = append(brokers, b)
	}
	// Nodes 1 and 2, a majority, form the cluster; node 3 comes later.
	start(1)
	start(2)
	pollFor(t, "nodes 1 and 2 in one cluster, with its id in their meta.properties", 20*time.Second, func() bool {
		id := brokers[0].Controller().ClusterID()
		return id != "" && brokers[1].Controller().ClusterID() == id &&
			len(brokers[0].Controller().Brokers()) >= 2 && metaClusterID(t, dirs[0]) == id && metaClusterID(t, dirs[1]) == id
	})
	id := brokers[0].Controller().ClusterID()
	start(3)
	pollFor(t, "node 3 refused by its peers, both cluster ids named", 10*time.Second, func() bool {
		l := node3Log.String()
		return strings.Contains(l, "peer refused this node") && strings.Contains(l, foreign) && strings.Contains(l, id)
	})
	for _, b := range brokers[0].Controller().Brokers() {
		if b == 3 {
			t.Fatalf("node 3, whose data belongs to cluster %s, registered in cluster %s", foreign, id)
		}
	}
	if got := brokers[2].Controller().ClusterID(); got != "" {
		t.Fatalf("node 3 learnt cluster id %q", got)
	}
	if got := metaClusterID(t, dirs[2]); got != foreign {
		t.Fatalf("node 3's meta.properties has cluster.id %q, want %s untouched", got, foreign)
	}
}
