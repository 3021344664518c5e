package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// testdata/onevoter_wal holds a one-voter metadata log written by the
// older version's own wal-based controller (topics created, one deleted,
// partitions added, a topic config set, producer ids allocated, the
// broker registered), and the image that controller held, encoded as a
// snapshot encodes it.
const fixtureDir = "testdata/onevoter_wal"

func fixtureConfig() ControllerConfig {
	return ControllerConfig{NodeID: 1, ClusterID: "fixture-cluster-0001", DefaultPartitions: 2, DefaultReplicationFactor: 1,
		Rack: "r1", Listeners: []BrokerListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}}
}

// loadFixture copies the old log into /data/__cluster_metadata of a new
// in-memory file system, durably, and returns the image it holds.
func loadFixture(t *testing.T) (*vfs.MemFS, []byte) {
	t.Helper()
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/data/__cluster_metadata", 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(filepath.Join(fixtureDir, "__cluster_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(fixtureDir, "__cluster_metadata", n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Create("/data/__cluster_metadata/" + n.Name())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(f.SyncData(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"/", "/data", "/data/__cluster_metadata"} {
		if err := fsys.SyncDir(d); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Join(fixtureDir, "image.json"))
	if err != nil {
		t.Fatal(err)
	}
	return fsys, want
}

// convertedImage is the encoding of a converted log's image as the old
// controller held it (want): the cluster secret, which logs from before
// secrets lack, is drawn at the first start and written after the
// conversion, so it and the entries after the old log's are left out,
// once checked.
func convertedImage(t *testing.T, im *Image, want []byte) []byte {
	t.Helper()
	var old imageSnapshot
	if err := json.Unmarshal(want, &old); err != nil {
		t.Fatal(err)
	}
	if !im.HasClusterSecret() || im.Offset < old.Offset {
		t.Fatalf("converted image at offset %d (the old log's ends at %d), with a cluster secret: %t", im.Offset, old.Offset, im.HasClusterSecret())
	}
	var s imageSnapshot
	if err := json.Unmarshal(imageBytes(t, im), &s); err != nil {
		t.Fatal(err)
	}
	s.Offset, s.ClusterSecret = old.Offset, nil
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func imageBytes(t *testing.T, im *Image) []byte {
	t.Helper()
	b, err := encodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An older version's one-voter metadata log converts on first start into
// the quorum of one's storage: the image is the one the old controller
// held, offsets go on from it, the old log is gone, and later starts
// find the converted log.
func TestOneVoterLogConverts(t *testing.T) {
	fsys, want := loadFixture(t)
	c, err := OpenController(fsys, "/data/__cluster_metadata", fixtureConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := convertedImage(t, c.Image(), want); !bytes.Equal(got, want) {
		t.Fatalf("converted image differs:\n got %s\nwant %s", got, want)
	}
	if _, err := fsys.Stat("/data/__cluster_metadata"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the old log is still there: %v", err)
	}
	before := c.Image().Offset
	res, err := c.CreateTopics(context.Background(), []CreateTopic{{Name: "after", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create after the conversion: %v %v", err, res[0].Err)
	}
	if after := c.Image().Offset; after <= before {
		t.Fatalf("offset %d after a change, was %d", after, before)
	}
	want2 := imageBytes(t, c.Image())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash (every unsynced byte lost) and a restart: the same image.
	fsys = fsys.Crash(vfs.CrashOptions{})
	c, err = OpenController(fsys, "/data/__cluster_metadata", fixtureConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := imageBytes(t, c.Image()); !bytes.Equal(got, want2) {
		t.Fatalf("image after restart differs:\n got %s\nwant %s", got, want2)
	}
}

// A crash at any point of the conversion leaves the old log or the
// converted one, and the next start ends with the image the old
// controller held: every mutating file-system operation in turn is made
// the last one before the crash.
func TestOneVoterConversionCrashSafe(t *testing.T) {
	const mutating = vfs.OpCreate | vfs.OpWrite | vfs.OpSyncData | vfs.OpSync | vfs.OpTruncate | vfs.OpPreallocate |
		vfs.OpRemove | vfs.OpRename | vfs.OpMkdir | vfs.OpSyncDir
	for after := 0; ; after++ {
		mem, want := loadFixture(t)
		ffs := vfs.NewFaultFS(mem)
		ffs.Inject(vfs.Fault{Op: mutating, After: after})
		c, err := OpenController(ffs, "/data/__cluster_metadata", fixtureConfig())
		if err == nil {
			c.Close()
		}
		crashed := ffs.Fired() > 0
		restarted := mem.Crash(vfs.CrashOptions{})
		c2, err2 := OpenController(restarted, "/data/__cluster_metadata", fixtureConfig())
		if err2 != nil {
			t.Fatalf("crash after %d operations (first start: %v): restart: %v", after, err, err2)
		}
		got := convertedImage(t, c2.Image(), want)
		c2.Close()
		if !bytes.Equal(got, want) {
			t.Fatalf("crash after %d operations: image differs:\n got %s\nwant %s", after, got, want)
		}
		if !crashed {
			t.Logf("conversion and start took %d mutating operations; each was the last before a crash once", after)
			return
		}
		if after > 10000 {
			t.Fatal("the first start never ends")
		}
	}
}
