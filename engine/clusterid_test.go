package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// A node that joins a cluster writes its id into meta.properties once;
// the directory then belongs to that cluster, and another cluster's id is
// refused with both ids named, the file left as it was and the directory
// failed.
func TestSetClusterID(t *testing.T) {
	const dir = "/var/lib/wren"
	mem := vfs.NewMem()
	cfg := ManagerConfig{NodeID: 2, Defaults: DefaultOptions(), JoinCluster: true}
	m, err := OpenManager(mem, dir, cfg)
	mustNotErr(t, err)
	if id := m.Meta().ClusterID; id != "" {
		t.Fatalf("a joining node's new directory has cluster.id %q before it learnt one", id)
	}
	mustNotErr(t, m.SetClusterID("Y2x1c3Rlci1vbmUAAAAAAA"))
	mustNotErr(t, m.SetClusterID("Y2x1c3Rlci1vbmUAAAAAAA")) // again: nothing to do
	mustNotErr(t, m.Close())

	m, err = OpenManager(mem, dir, cfg)
	mustNotErr(t, err)
	defer m.Close()
	if id := m.Meta().ClusterID; id != "Y2x1c3Rlci1vbmUAAAAAAA" {
		t.Fatalf("after a restart meta.properties has cluster.id %q", id)
	}
	before, err := vfs.ReadFile(mem, dir+"/"+MetaPropertiesFile)
	mustNotErr(t, err)
	err = m.SetClusterID("b3RoZXItY2x1c3RlcgAAAA")
	if !errors.Is(err, ErrClusterIDMismatch) {
		t.Fatalf("another cluster's id: %v, want ErrClusterIDMismatch", err)
	}
	for _, want := range []string{"Y2x1c3Rlci1vbmUAAAAAAA", "b3RoZXItY2x1c3RlcgAAAA", dir + "/" + MetaPropertiesFile, "never wipes"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	after, err := vfs.ReadFile(mem, dir+"/"+MetaPropertiesFile)
	mustNotErr(t, err)
	if string(before) != string(after) {
		t.Fatalf("meta.properties changed by a refused cluster id:\n%s\n->\n%s", before, after)
	}
	if !errors.Is(m.Failed(), ErrClusterIDMismatch) {
		t.Fatalf("the directory is not failed: %v", m.Failed())
	}
}

// Without JoinCluster (one node, or cluster.id in the config) a new
// directory gets its id at once, as before.
func TestNewDirectoryClusterID(t *testing.T) {
	mem := vfs.NewMem()
	m, err := OpenManager(mem, "/d", ManagerConfig{NodeID: 1, Defaults: DefaultOptions()})
	mustNotErr(t, err)
	defer m.Close()
	if m.Meta().ClusterID == "" {
		t.Fatal("a single node's new directory has no cluster id")
	}
}

// Node 1 pointed at node 2's data directory (two nodes' log.dirs mixed
// up in a shared config file) is told whose directory it is, not that it
// belongs to another cluster, and the directory is left as it was.
func TestOtherNodesDataDir(t *testing.T) {
	const dir = "/var/lib/wren"
	const clusterID = "Y2x1c3Rlci1vbmUAAAAAAA"
	for _, tc := range []struct {
		name       string
		configured string // this node's configured cluster.id
		want       string
	}{
		{"cluster.id configured", clusterID, "belongs to node 2 of this cluster (" + clusterID + "), not node 1"},
		{"cluster.id learnt", "", "belongs to node 2 of cluster " + clusterID + ", not node 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			m, err := OpenManager(mem, dir, ManagerConfig{NodeID: 2, ClusterID: clusterID, Defaults: DefaultOptions()})
			mustNotErr(t, err)
			mustNotErr(t, m.Close())
			before, err := vfs.ReadFile(mem, dir+"/"+MetaPropertiesFile)
			mustNotErr(t, err)

			_, err = OpenManager(mem, dir, ManagerConfig{NodeID: 1, ClusterID: tc.configured, Defaults: DefaultOptions()})
			if !errors.Is(err, ErrNodeIDMismatch) || errors.Is(err, ErrClusterIDMismatch) {
				t.Fatalf("node 1 on node 2's directory: %v, want ErrNodeIDMismatch only", err)
			}
			for _, want := range []string{"data directory " + dir + " " + tc.want, "node.id=2", "log.dirs of its own"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			after, err := vfs.ReadFile(mem, dir+"/"+MetaPropertiesFile)
			mustNotErr(t, err)
			if string(before) != string(after) {
				t.Fatalf("meta.properties changed by a refused start:\n%s\n->\n%s", before, after)
			}
		})
	}
}
