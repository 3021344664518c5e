package vfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testFSBasics runs the same basic script on any FS rooted at dir.
func testFSBasics(t *testing.T, fsys FS, dir string) {
	t.Helper()
	p := func(name string) string { return filepath.Join(dir, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	must(fsys.MkdirAll(p("topic-0"), 0o755))
	f, err := fsys.Create(p("topic-0/00000000000000000000.log"))
	must(err)
	if f.Name() != p("topic-0/00000000000000000000.log") {
		t.Fatalf("Name() = %q", f.Name())
	}
	if _, err := f.WriteAt([]byte("hello world"), 0); err != nil {
		t.Fatal(err)
	}
	// A write past the end leaves a hole that reads as zeros.
	if _, err := f.WriteAt([]byte("!"), 13); err != nil {
		t.Fatal(err)
	}
	must(f.SyncData())
	must(f.Sync())
	if size, err := f.Size(); err != nil || size != 14 {
		t.Fatalf("Size() = %d, %v; want 14", size, err)
	}
	buf := make([]byte, 14)
	if n, err := f.ReadAt(buf, 0); err != nil || n != 14 {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if want := []byte("hello world\x00\x00!"); !bytes.Equal(buf, want) {
		t.Fatalf("read %q, want %q", buf, want)
	}
	// A read running past the end returns what there is and io.EOF.
	if n, err := f.ReadAt(buf, 10); n != 4 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt past end = %d, %v; want 4, EOF", n, err)
	}
	must(f.Truncate(5))
	if size, _ := f.Size(); size != 5 {
		t.Fatalf("after Truncate(5) size = %d", size)
	}
	must(f.Preallocate(0, 1<<20))
	if size, _ := f.Size(); size != 5 {
		t.Fatalf("Preallocate changed the size to %d", size)
	}
	must(f.Close())
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("ReadAt after Close = %v, want ErrClosed", err)
	}

	must(fsys.Rename(p("topic-0/00000000000000000000.log"), p("topic-0/renamed.log")))
	must(fsys.SyncDir(p("topic-0")))
	if _, err := fsys.Stat(p("topic-0/00000000000000000000.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of the old name = %v, want ErrNotExist", err)
	}
	fi, err := fsys.Stat(p("topic-0/renamed.log"))
	must(err)
	if fi.Size() != 5 || fi.IsDir() || fi.Name() != "renamed.log" {
		t.Fatalf("Stat = %s size %d dir %v", fi.Name(), fi.Size(), fi.IsDir())
	}
	must(WriteFileAtomic(fsys, p("topic-0/leader-epoch-checkpoint"), []byte("0\n1\n0 0\n")))
	got, err := ReadFile(fsys, p("topic-0/leader-epoch-checkpoint"))
	must(err)
	if string(got) != "0\n1\n0 0\n" {
		t.Fatalf("ReadFile = %q", got)
	}
	names, err := fsys.List(p("topic-0"))
	must(err)
	if strings.Join(names, ",") != "leader-epoch-checkpoint,renamed.log" {
		t.Fatalf("List = %v", names)
	}

	ro, err := fsys.Open(p("topic-0/renamed.log"))
	must(err)
	if _, err := ro.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("WriteAt on a read-only file = %v, want EBADF", err)
	}
	must(ro.Close())
	rw, err := fsys.OpenReadWrite(p("topic-0/renamed.log"))
	must(err)
	if size, _ := rw.Size(); size != 5 {
		t.Fatalf("OpenReadWrite truncated the file to %d", size)
	}
	must(rw.Close())

	if err := fsys.Remove(p("topic-0")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("Remove of a non-empty dir = %v, want ENOTEMPTY", err)
	}
	must(fsys.Remove(p("topic-0/renamed.log")))
	if _, err := fsys.Open(p("topic-0/renamed.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a removed file = %v, want ErrNotExist", err)
	}
	if err := fsys.Remove(p("topic-0/renamed.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Remove = %v, want ErrNotExist", err)
	}
	must(fsys.RemoveAll(p("topic-0")))
	must(fsys.RemoveAll(p("topic-0"))) // missing is fine
	if _, err := fsys.List(p("topic-0")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of a removed dir = %v, want ErrNotExist", err)
	}
}

func TestOSBasics(t *testing.T) {
	testFSBasics(t, NewOS(), t.TempDir())
}

func TestMemBasics(t *testing.T) {
	testFSBasics(t, NewMem(), "/data")
}

func TestOSFilesHaveFd(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fder, ok := f.(Fder)
	if !ok {
		t.Fatalf("%T does not implement Fder", f)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fder.Fd()), &st); err != nil {
		t.Fatalf("Fd() is not a live descriptor: %v", err)
	}
}

// TestOSPreallocate checks that space is reserved (when the file system can)
// without the size moving, which recovery relies on to find the log end.
func TestOSPreallocate(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	const reserve = 4 << 20
	if err := f.Preallocate(0, reserve); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); err != nil || size != 3 {
		t.Fatalf("size after Preallocate = %d, %v; want 3", size, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.(Fder).Fd()), &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("blocks allocated: %d bytes", st.Blocks*512)
	if st.Blocks*512 < reserve {
		t.Logf("file system did not reserve space (fallocate unsupported?)")
	}
	if err := f.Preallocate(0, 0); err != nil {
		t.Fatalf("zero-length Preallocate = %v", err)
	}
	ro, err := Default.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Preallocate(0, 4096); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Preallocate on a read-only file = %v, want EBADF", err)
	}
}

func TestOSLockTwiceFails(t *testing.T) {
	testLockTwiceFails(t, Default, filepath.Join(t.TempDir(), ".lock"))
}

func TestMemLockTwiceFails(t *testing.T) {
	testLockTwiceFails(t, NewMem(), "/data/.lock")
}

func testLockTwiceFails(t *testing.T, fsys FS, name string) {
	if err := fsys.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := fsys.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file description: a second Lock from
	// the same process must fail too.
	if l2, err := fsys.Lock(name); !errors.Is(err, ErrLocked) {
		if err == nil {
			l2.Close()
		}
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	} else if !strings.Contains(err.Error(), name) {
		t.Fatalf("error %q does not name the path", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l3, err := fsys.Lock(name)
	if err != nil {
		t.Fatalf("Lock after release = %v", err)
	}
	if err := l3.Close(); err != nil {
		t.Fatal(err)
	}
}

const lockHelperEnv = "VFS_TEST_LOCK_HELPER"

// TestOSLockOtherProcess checks that the lock also keeps out another
// process: it reruns this test binary as a helper that tries to take it.
func TestOSLockOtherProcess(t *testing.T) {
	if name := os.Getenv(lockHelperEnv); name != "" {
		l, err := Default.Lock(name)
		switch {
		case errors.Is(err, ErrLocked):
			os.Exit(3)
		case err != nil:
			os.Exit(4)
		}
		l.Close()
		os.Exit(0)
	}
	name := filepath.Join(t.TempDir(), ".lock")
	runHelper := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestOSLockOtherProcess$")
		cmd.Env = append(os.Environ(), lockHelperEnv+"="+name)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if errors.Is(err, syscall.ENOEXEC) {
			// A cross-architecture run under a user-mode emulator cannot
			// start the test binary directly; the native run covers this.
			t.Skipf("cannot re-run the test binary here: %v", err)
		}
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		return 0
	}
	l, err := Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if code := runHelper(); code != 3 {
		t.Fatalf("helper exit code %d while the lock is held, want 3 (ErrLocked)", code)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if code := runHelper(); code != 0 {
		t.Fatalf("helper exit code %d after release, want 0", code)
	}
}

func TestOSMissingIsNotExist(t *testing.T) {
	testMissingIsNotExist(t, Default, t.TempDir())
}

func TestMemMissingIsNotExist(t *testing.T) {
	testMissingIsNotExist(t, NewMem(), "/")
}

func testMissingIsNotExist(t *testing.T, fsys FS, dir string) {
	missing := filepath.Join(dir, "missing")
	checks := map[string]error{}
	_, checks["Open"] = fsys.Open(missing)
	_, checks["Stat"] = fsys.Stat(missing)
	_, checks["List"] = fsys.List(missing)
	checks["Remove"] = fsys.Remove(missing)
	checks["Rename"] = fsys.Rename(missing, missing+"2")
	checks["SyncDir"] = fsys.SyncDir(missing)
	_, checks["Create in missing dir"] = fsys.Create(filepath.Join(missing, "x"))
	_, checks["ReadFile"] = ReadFile(fsys, missing)
	for op, err := range checks {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want ErrNotExist", op, err)
		}
	}
}

// TestReadFileLimit: the operating system's file system reads a file
// whole on the bare descriptor (readWhole); it answers as the path
// through Open does, on MemFS and on the real one alike.
func TestReadFileLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys FS
		root string
	}{
		{"os", NewOS(), t.TempDir()},
		{"os-behind-fault", NewFaultFS(NewOS()), t.TempDir()},
		{"mem", NewMem(), "/d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fsys.MkdirAll(tc.root, 0o755); err != nil {
				t.Fatal(err)
			}
			name := tc.root + "/small"
			if err := WriteFileAtomic(tc.fsys, name, []byte("0\n1\n0 0\n")); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFileLimit(tc.fsys, name, 8)
			if err != nil || string(got) != "0\n1\n0 0\n" {
				t.Fatalf("ReadFileLimit at its size: %q, %v", got, err)
			}
			if got, err := ReadFile(tc.fsys, name); err != nil || string(got) != "0\n1\n0 0\n" {
				t.Fatalf("ReadFile: %q, %v", got, err)
			}
			if _, err := ReadFileLimit(tc.fsys, name, 7); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("ReadFileLimit under its size: %v, want ErrTooLarge", err)
			}
			if _, err := ReadFileLimit(tc.fsys, tc.root+"/missing", 8); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("ReadFileLimit of a missing file: %v, want not exist", err)
			}
			empty := tc.root + "/empty"
			if err := WriteFileAtomic(tc.fsys, empty, nil); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadFileLimit(tc.fsys, empty, 8); err != nil || len(got) != 0 {
				t.Fatalf("ReadFileLimit of an empty file: %q, %v", got, err)
			}
		})
	}
}
