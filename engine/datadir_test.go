package engine

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/internal/vfs"
)

var dirSentinels = []error{ErrDataDirLocked, ErrDataDirNotWritable, ErrDataDirReadOnly, ErrMetaPropertiesMissing}

// checkDirError fails unless err carries want and no other data directory
// sentinel, and its message names dir and every one of hints.
func checkDirError(t *testing.T, err, want error, dir string, hints ...string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	for _, other := range dirSentinels {
		if other != want && errors.Is(err, other) {
			t.Fatalf("%v also claims %v", err, other)
		}
	}
	for _, h := range append([]string{dir}, hints...) {
		if !strings.Contains(err.Error(), h) {
			t.Fatalf("error %q does not say %q", err, h)
		}
	}
}

// makeDataDir opens a data directory with one partition and closes it.
func makeDataDir(t *testing.T, fsys vfs.FS, dir string, cfg ManagerConfig) {
	t.Helper()
	m, err := OpenManager(fsys, dir, cfg)
	mustNotErr(t, err)
	_, err = m.GetOrCreateLog(TopicPartition{"orders", 0})
	mustNotErr(t, err)
	mustNotErr(t, m.Close())
}

func TestOpenManagerLockedDir(t *testing.T) {
	dir := t.TempDir()
	cfg := ManagerConfig{NodeID: 1, Defaults: DefaultOptions()}
	m, err := OpenManager(vfs.NewOS(), dir, cfg)
	mustNotErr(t, err)
	defer m.Close()
	_, err = OpenManager(vfs.NewOS(), dir, cfg)
	checkDirError(t, err, ErrDataDirLocked, dir, "in use by another process", "stop the other wren")
	if !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("%v does not wrap vfs.ErrLocked", err)
	}
}

// TestOpenManagerErrno injects each errno where a real file system gives
// it: creating a missing data directory, taking the lock (the first write
// into an existing one), and writing checkpoints after the lock.
func TestOpenManagerErrno(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    vfs.Op
		errno syscall.Errno
		fresh bool // the data directory does not exist yet
		want  error
		hint  string
	}{
		{"mkdir EACCES", vfs.OpMkdir, syscall.EACCES, true, ErrDataDirNotWritable, "chown"},
		{"mkdir EROFS", vfs.OpMkdir, syscall.EROFS, true, ErrDataDirReadOnly, "remount"},
		{"lock EACCES", vfs.OpLock, syscall.EACCES, false, ErrDataDirNotWritable, "chown"},
		{"lock EPERM", vfs.OpLock, syscall.EPERM, false, ErrDataDirNotWritable, "chown"},
		{"lock EROFS", vfs.OpLock, syscall.EROFS, false, ErrDataDirReadOnly, "remount"},
		{"checkpoint EACCES", vfs.OpCreate, syscall.EACCES, false, ErrDataDirNotWritable, "chown"},
		{"checkpoint EROFS", vfs.OpCreate, syscall.EROFS, false, ErrDataDirReadOnly, "read-only file system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			cfg := ManagerConfig{NodeID: 1, Defaults: DefaultOptions()}
			dir := "/var/lib/wren"
			if !tc.fresh {
				makeDataDir(t, mem, dir, cfg)
			}
			ffs := vfs.NewFaultFS(mem)
			ffs.Inject(vfs.Fault{Op: tc.op, Err: tc.errno})
			_, err := OpenManager(ffs, dir, cfg)
			checkDirError(t, err, tc.want, dir, tc.hint)
			if !errors.Is(err, tc.errno) {
				t.Fatalf("%v does not wrap %v", err, tc.errno)
			}
		})
	}
}

// TestOpenManagerReadOnlyMount opens a data directory on a real read-only
// file system: a tmpfs the test mounts and remounts read-only. Root only.
func TestOpenManagerReadOnlyMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	cfg := ManagerConfig{NodeID: 1, Defaults: DefaultOptions()}
	dir := mnt + "/data"
	makeDataDir(t, vfs.NewOS(), dir, cfg)
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", mnt, err)
	}
	_, err := OpenManager(vfs.NewOS(), dir, cfg)
	checkDirError(t, err, ErrDataDirReadOnly, dir, "read-only file system", "remount")
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("%v does not wrap EROFS", err)
	}
	missing := mnt + "/not-yet"
	_, err = OpenManager(vfs.NewOS(), missing, cfg)
	checkDirError(t, err, ErrDataDirReadOnly, missing)
}

// TestOpenManagerNotWritableDir opens a data directory the user may not
// write on a real file system. Root may write anywhere, so it runs only
// for other users; root runs the errno-injected cases above.
func TestOpenManagerNotWritableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes through mode 0500; TestOpenManagerErrno covers EACCES")
	}
	cfg := ManagerConfig{NodeID: 1, Defaults: DefaultOptions()}
	parent := t.TempDir()
	dir := parent + "/data"
	mustNotErr(t, os.Mkdir(dir, 0o500))
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	_, err := OpenManager(vfs.NewOS(), dir, cfg)
	checkDirError(t, err, ErrDataDirNotWritable, dir, "chown")
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("%v does not wrap EACCES", err)
	}
}

func TestOpenManagerRefusesMissingMeta(t *testing.T) {
	const dir = "/var/lib/wren"
	mem := vfs.NewMem()
	cfg := ManagerConfig{NodeID: 3, Defaults: DefaultOptions()}
	makeDataDir(t, mem, dir, cfg)
	mustNotErr(t, mem.Remove(dir+"/"+MetaPropertiesFile))

	_, err := OpenManager(mem, dir, cfg)
	checkDirError(t, err, ErrMetaPropertiesMissing, dir, dir+"/"+MetaPropertiesFile, "orders-0", "node.id=3", "version=1", "backup")
	if _, serr := mem.Stat(dir + "/" + MetaPropertiesFile); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("a refused directory got a new meta.properties: %v", serr)
	}

	// The cluster id comes from the config, or better from the metadata
	// log when there is one.
	cfg.ClusterID = "Q2x1c3Rlci1mcm9tLWNmZw"
	_, err = OpenManager(mem, dir, cfg)
	checkDirError(t, err, ErrMetaPropertiesMissing, dir, "cluster.id="+cfg.ClusterID)
	mustNotErr(t, mem.MkdirAll(dir+"/__cluster_metadata", 0o755))
	cfg.MetadataLogDir = "__cluster_metadata"
	cfg.ReadClusterID = func(path string) (string, error) {
		if path != dir+"/__cluster_metadata" {
			t.Errorf("ReadClusterID(%q)", path)
		}
		return "TWV0YWRhdGEtbG9nLWlkAA", nil
	}
	_, err = OpenManager(mem, dir, cfg)
	checkDirError(t, err, ErrMetaPropertiesMissing, dir, "cluster.id=TWV0YWRhdGEtbG9nLWlkAA", "metadata log")

	// A metadata log alone is data too.
	mustNotErr(t, mem.RemoveAll(dir+"/orders-0"))
	mustNotErr(t, mem.Remove(dir+"/"+RecoveryPointCheckpointFile))
	mustNotErr(t, mem.Remove(dir+"/"+LogStartOffsetCheckpointFile))
	_, err = OpenManager(mem, dir, cfg)
	checkDirError(t, err, ErrMetaPropertiesMissing, dir, "__cluster_metadata")
}

// TestOpenManagerFreshDirWithUnrelatedEntries: a new file system's
// lost+found, or a stray file, is not data; the directory opens as new.
func TestOpenManagerFreshDirWithUnrelatedEntries(t *testing.T) {
	const dir = "/mnt/sd"
	mem := vfs.NewMem()
	mustNotErr(t, mem.MkdirAll(dir+"/lost+found", 0o700))
	mustNotErr(t, vfs.WriteFileAtomic(mem, dir+"/README", []byte("wren data\n")))
	m, err := OpenManager(mem, dir, ManagerConfig{NodeID: 1, Defaults: DefaultOptions(), MetadataLogDir: "__cluster_metadata"})
	mustNotErr(t, err)
	mustNotErr(t, m.Close())
	if _, err := mem.Stat(dir + "/" + MetaPropertiesFile); err != nil {
		t.Fatalf("a fresh directory got no meta.properties: %v", err)
	}
}
