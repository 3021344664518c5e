package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// memT wraps a MemFS with helpers that fail the test on error.
type memT struct {
	t *testing.T
	*MemFS
}

func (m memT) mkdir(dir string) {
	m.t.Helper()
	if err := m.MkdirAll(dir, 0o755); err != nil {
		m.t.Fatal(err)
	}
}

func (m memT) syncDir(dir string) {
	m.t.Helper()
	if err := m.SyncDir(dir); err != nil {
		m.t.Fatal(err)
	}
}

func (m memT) create(name string) File {
	m.t.Helper()
	f, err := m.Create(name)
	if err != nil {
		m.t.Fatal(err)
	}
	return f
}

func (m memT) write(f File, off int64, s string) {
	m.t.Helper()
	if _, err := f.WriteAt([]byte(s), off); err != nil {
		m.t.Fatal(err)
	}
}

func (m memT) syncData(f File) {
	m.t.Helper()
	if err := f.SyncData(); err != nil {
		m.t.Fatal(err)
	}
}

// describe renders a whole MemFS as "path=contents" lines, directories as
// "path/", so a test can compare a crash result with one string.
func describe(t *testing.T, m *MemFS) string {
	t.Helper()
	var lines []string
	var walk func(dir string)
	walk = func(dir string) {
		names, err := m.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			p := strings.TrimPrefix(path.Join(dir, name), "/")
			fi, err := m.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() {
				lines = append(lines, p+"/")
				walk(p)
				continue
			}
			data, err := ReadFile(m, p)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%s=%q", p, data))
		}
	}
	walk("/")
	return strings.Join(lines, " ")
}

func TestMemCrash(t *testing.T) {
	tests := []struct {
		name string
		run  func(m memT)
		want string
	}{
		{
			name: "unsynced data dropped",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "lost")
			},
			want: `a=""`,
		},
		{
			name: "synced data kept, later writes dropped",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "kept")
				m.syncData(f)
				m.write(f, 4, "-lost")
				m.write(f, 0, "LOST")
			},
			want: `a="kept"`,
		},
		{
			name: "Sync is as good as SyncData",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "kept")
				if err := f.Sync(); err != nil {
					m.t.Fatal(err)
				}
			},
			want: `a="kept"`,
		},
		{
			name: "created and synced file lost without SyncDir",
			run: func(m memT) {
				f := m.create("a")
				m.write(f, 0, "data")
				m.syncData(f)
			},
			want: ``,
		},
		{
			name: "file in a new dir lost when only the dir is synced",
			run: func(m memT) {
				m.mkdir("d")
				f := m.create("d/a")
				m.write(f, 0, "data")
				m.syncData(f)
				m.syncDir("d")
			},
			want: ``,
		},
		{
			name: "MkdirAll needs SyncDir of each parent",
			run: func(m memT) {
				m.mkdir("d/e/f")
				m.syncDir("/")
				m.syncDir("d/e")
			},
			want: `d/`,
		},
		{
			name: "rename without SyncDir reverted",
			run: func(m memT) {
				f := m.create("a.tmp")
				m.write(f, 0, "new")
				m.syncData(f)
				m.syncDir("/")
				if err := m.Rename("a.tmp", "a"); err != nil {
					m.t.Fatal(err)
				}
			},
			want: `a.tmp="new"`,
		},
		{
			name: "rename over a file with SyncDir kept",
			run: func(m memT) {
				if err := WriteFileAtomic(m, "a", []byte("old")); err != nil {
					m.t.Fatal(err)
				}
				if err := WriteFileAtomic(m, "a", []byte("new")); err != nil {
					m.t.Fatal(err)
				}
			},
			want: `a="new"`,
		},
		{
			name: "remove without SyncDir reverted, with synced data",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				if err := m.Remove("a"); err != nil {
					m.t.Fatal(err)
				}
				// The inode lives on through the open handle; syncing it
				// still makes its data durable.
				m.write(f, 0, "zombie")
				m.syncData(f)
			},
			want: `a="zombie"`,
		},
		{
			name: "remove with SyncDir kept",
			run: func(m memT) {
				m.create("a")
				m.create("b")
				m.syncDir("/")
				if err := m.RemoveAll("a"); err != nil {
					m.t.Fatal(err)
				}
				m.syncDir("/")
			},
			want: `b=""`,
		},
		{
			name: "RemoveAll without SyncDir reverted",
			run: func(m memT) {
				m.mkdir("d")
				m.syncDir("/")
				f := m.create("d/a")
				m.write(f, 0, "x")
				m.syncData(f)
				m.syncDir("d")
				if err := m.RemoveAll("d"); err != nil {
					m.t.Fatal(err)
				}
			},
			want: `d/ d/a="x"`,
		},
		{
			name: "unsynced truncate reverted",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "0123456789")
				m.syncData(f)
				if err := f.Truncate(3); err != nil {
					m.t.Fatal(err)
				}
				m.write(f, 5, "x")
				if err := f.Truncate(20); err != nil {
					m.t.Fatal(err)
				}
			},
			want: `a="0123456789"`,
		},
		{
			name: "synced truncate kept",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "0123456789")
				if err := f.Truncate(3); err != nil {
					m.t.Fatal(err)
				}
				m.syncData(f)
			},
			want: `a="012"`,
		},
		{
			name: "Create over a synced file without sync restores it",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "old")
				m.syncData(f)
				g := m.create("a")
				m.write(g, 0, "n")
			},
			want: `a="old"`,
		},
		{
			name: "sync through a second handle covers the inode",
			run: func(m memT) {
				f := m.create("a")
				m.syncDir("/")
				m.write(f, 0, "data")
				g, err := m.Open("a")
				if err != nil {
					m.t.Fatal(err)
				}
				m.syncData(g)
			},
			want: `a="data"`,
		},
		{
			name: "fsync of a directory handle is SyncDir",
			run: func(m memT) {
				m.create("a")
				d, err := m.Open("/")
				if err != nil {
					m.t.Fatal(err)
				}
				m.syncData(d)
			},
			want: `a=""`,
		},
		{
			name: "cross-directory rename with only the target synced: two links",
			run: func(m memT) {
				m.mkdir("d")
				m.mkdir("e")
				f := m.create("d/a")
				m.write(f, 0, "x")
				m.syncData(f)
				m.syncDir("/")
				m.syncDir("d")
				m.syncDir("e")
				if err := m.Rename("d/a", "e/a"); err != nil {
					m.t.Fatal(err)
				}
				m.syncDir("e")
			},
			want: `d/ d/a="x" e/ e/a="x"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMem()
			tt.run(memT{t, m})
			after := m.Crash(CrashOptions{})
			if got := describe(t, after); got != tt.want {
				t.Fatalf("after crash:\n got  %s\n want %s", got, tt.want)
			}
			// The post-crash FS is fully durable: crashing it again
			// changes nothing.
			if got := describe(t, after.Crash(CrashOptions{})); got != tt.want {
				t.Fatalf("after a second crash:\n got  %s\n want %s", got, tt.want)
			}
		})
	}
}

func TestMemFileSizeLimit(t *testing.T) {
	f, err := NewMem().Create("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 1<<40); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("WriteAt at 1 TiB = %v, want EFBIG", err)
	}
	if err := f.Truncate(1 << 40); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Truncate to 1 TiB = %v, want EFBIG", err)
	}
	if size, _ := f.Size(); size != 0 {
		t.Fatalf("size %d after refused operations", size)
	}
}

func TestMemCrashedFSFailsEverything(t *testing.T) {
	m := NewMem()
	f, err := m.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := m.Lock("lock")
	if err != nil {
		t.Fatal(err)
	}
	after := m.Crash(CrashOptions{})
	if again := m.Crash(CrashOptions{}); again != after {
		t.Fatal("a second Crash returned another state")
	}
	if m.CrashState() != after {
		t.Fatal("CrashState differs from what Crash returned")
	}
	ops := map[string]error{}
	_, ops["WriteAt"] = f.WriteAt([]byte("x"), 0)
	_, ops["ReadAt"] = f.ReadAt(make([]byte, 1), 0)
	ops["SyncData"] = f.SyncData()
	ops["Sync"] = f.Sync()
	ops["Truncate"] = f.Truncate(0)
	ops["Preallocate"] = f.Preallocate(0, 10)
	_, ops["Size"] = f.Size()
	ops["Close"] = f.Close()
	ops["lock Close"] = lock.Close()
	_, ops["Create"] = m.Create("b")
	_, ops["Open"] = m.Open("a")
	_, ops["OpenReadWrite"] = m.OpenReadWrite("a")
	ops["Remove"] = m.Remove("a")
	ops["RemoveAll"] = m.RemoveAll("a")
	ops["Rename"] = m.Rename("a", "b")
	ops["MkdirAll"] = m.MkdirAll("d", 0o755)
	_, ops["List"] = m.List("/")
	_, ops["Stat"] = m.Stat("a")
	ops["SyncDir"] = m.SyncDir("/")
	_, ops["Lock"] = m.Lock("lock2")
	for op, err := range ops {
		if !errors.Is(err, ErrCrashed) {
			t.Errorf("%s on a crashed FS = %v, want ErrCrashed", op, err)
		}
	}
	// Locks do not survive a crash.
	l, err := after.Lock("lock")
	if err != nil {
		t.Fatalf("Lock after crash = %v", err)
	}
	l.Close()
}

// writeRun writes n distinct chunks to one file after making it durable, and
// returns the file contents after each write: states[k] is the contents once
// k writes landed.
func writeRun(t *testing.T, m *MemFS, n int) (states []string) {
	mt := memT{t, m}
	f := mt.create("seg")
	mt.syncDir("/")
	mt.write(f, 0, "base")
	mt.syncData(f)
	cur := []byte("base")
	states = append(states, string(cur))
	for i := range n {
		chunk := fmt.Sprintf("<%d:%s>", i, strings.Repeat(string(rune('a'+i)), i))
		off := int64(len(cur))
		if i%4 == 3 {
			off = 2 // an overwrite now and then, not only appends
		}
		mt.write(f, off, chunk)
		if end := int(off) + len(chunk); end > len(cur) {
			cur = append(cur, make([]byte, end-len(cur))...)
		}
		copy(cur[off:], chunk)
		states = append(states, string(cur))
	}
	return states
}

func TestMemKeepUnsyncedKeepsAPrefix(t *testing.T) {
	const writes = 8
	seen := map[int]bool{}
	for seed := range uint64(200) {
		m := NewMem()
		states := writeRun(t, m, writes)
		after := m.Crash(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1)), KeepUnsynced: true})
		got, err := ReadFile(after, "seg")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		k := -1
		for i, s := range states {
			if s == string(got) {
				k = i
			}
		}
		if k < 0 {
			t.Fatalf("seed %d: %q is not the state after any prefix of the writes", seed, got)
		}
		seen[k] = true
	}
	// Every prefix, from none to all, should turn up in 200 tries (each has
	// probability 1/9); missing ones mean the choice is not uniform.
	for k := 0; k <= writes; k++ {
		if !seen[k] {
			t.Errorf("no seed kept exactly %d writes; seen %v", k, seen)
		}
	}
}

func TestMemTearLastWrite(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepUnsynced=%v", keep), func(t *testing.T) {
			torn := 0
			for seed := range uint64(200) {
				m := NewMem()
				f := memT{t, m}.create("seg")
				memT{t, m}.syncDir("/")
				var want []string // acceptable outcomes
				full := ""
				for i := range 4 {
					chunk := strings.Repeat(string(rune('a'+i)), 10)
					memT{t, m}.write(f, int64(len(full)), chunk)
					for cut := range len(chunk) + 1 {
						if keep || i == 0 {
							want = append(want, full+chunk[:cut])
						}
					}
					full += chunk
				}
				after := m.Crash(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 2)), KeepUnsynced: keep, TearLastWrite: true})
				got, err := ReadFile(after, "seg")
				if err != nil {
					t.Fatal(err)
				}
				ok := false
				for _, w := range want {
					ok = ok || w == string(got)
				}
				if !ok {
					t.Fatalf("seed %d: %q is not a prefix of whole writes plus part of the next", seed, got)
				}
				if len(got)%10 != 0 {
					torn++
				}
			}
			if torn == 0 {
				t.Fatal("200 seeds and not one torn write")
			}
			t.Logf("%d/200 crashes tore a write", torn)
		})
	}
}

// TestMemCrashAfterEveryOp crashes a workload at each of its mutating
// operations in turn. The workload replaces a file crash-safely, version
// after version; after any crash the file must hold a whole version, no older
// than the last one WriteFileAtomic acknowledged.
func TestMemCrashAfterEveryOp(t *testing.T) {
	const versions = 5
	workload := func(m FS) (acked int, err error) {
		if err := m.MkdirAll("data", 0o755); err != nil {
			return 0, err
		}
		if err := m.SyncDir("/"); err != nil {
			return 0, err
		}
		for v := 1; v <= versions; v++ {
			if err := WriteFileAtomic(m, "data/meta.properties", []byte(fmt.Sprintf("version=%d\n", v))); err != nil {
				return acked, err
			}
			acked = v
		}
		return acked, nil
	}
	dry := NewMem()
	if _, err := workload(dry); err != nil {
		t.Fatal(err)
	}
	total := dry.MutatingOps()
	if total < versions*5 {
		t.Fatalf("only %d mutating operations counted", total)
	}
	for n := range total + 1 {
		for _, opts := range []CrashOptions{
			{},
			{Rand: rand.New(rand.NewPCG(uint64(n), 3)), KeepUnsynced: true, TearLastWrite: true},
		} {
			m := NewMem()
			m.SetCrashAfter(n, opts)
			acked, err := workload(m)
			after := m.CrashState()
			if n == total {
				// The workload fits: no crash yet.
				if err != nil || after != nil {
					t.Fatalf("n=%d: err %v, crashed %v", n, err, after != nil)
				}
				after = m.Crash(opts)
			} else if !errors.Is(err, ErrCrashed) || after == nil {
				t.Fatalf("n=%d: workload returned %v, want ErrCrashed", n, err)
			}
			if got := m.MutatingOps(); got != min(n+1, total) {
				t.Fatalf("n=%d: %d mutating ops counted", n, got)
			}
			data, err := ReadFile(after, "data/meta.properties")
			if errors.Is(err, fs.ErrNotExist) {
				if acked > 0 {
					t.Fatalf("n=%d opts=%+v: version %d acknowledged, file gone", n, opts, acked)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var v int
			if _, err := fmt.Sscanf(string(data), "version=%d\n", &v); err != nil || string(data) != fmt.Sprintf("version=%d\n", v) {
				t.Fatalf("n=%d opts=%+v: torn contents %q", n, opts, data)
			}
			if v < acked || v > acked+1 {
				t.Fatalf("n=%d: found version %d, acknowledged %d", n, v, acked)
			}
		}
	}
}

// TestMemConcurrentAppendsAndCrash runs appenders and readers at once (the
// engine's pattern) and crashes under them; run with -race.
func TestMemConcurrentAppendsAndCrash(t *testing.T) {
	m := NewMem()
	const writers, record = 4, 16
	files := make([]File, writers)
	for i := range files {
		f, err := m.Create(fmt.Sprintf("p%d.log", i))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	m.SetCrashAfter(400, CrashOptions{})
	var wg sync.WaitGroup
	synced := make([]int64, writers) // bytes each writer saw synced
	for i, f := range files {
		wg.Add(2)
		go func() {
			defer wg.Done()
			rec := bytes.Repeat([]byte{byte('a' + i)}, record)
			for off := int64(0); ; off += record {
				if _, err := f.WriteAt(rec, off); err != nil {
					if !errors.Is(err, ErrCrashed) {
						t.Errorf("write: %v", err)
					}
					return
				}
				if off%(4*record) == 0 {
					if err := f.SyncData(); err != nil {
						if !errors.Is(err, ErrCrashed) {
							t.Errorf("sync: %v", err)
						}
						return
					}
					synced[i] = off + record
				}
			}
		}()
		go func() {
			defer wg.Done()
			buf := make([]byte, record)
			for {
				if _, err := f.Size(); errors.Is(err, ErrCrashed) {
					return
				}
				_, err := f.ReadAt(buf, 0)
				if errors.Is(err, ErrCrashed) {
					return
				}
			}
		}()
	}
	wg.Wait()
	after := m.CrashState()
	if after == nil {
		t.Fatal("no crash")
	}
	for i := range writers {
		data, err := ReadFile(after, fmt.Sprintf("p%d.log", i))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) < synced[i] {
			t.Fatalf("p%d: %d bytes survived, %d were synced", i, len(data), synced[i])
		}
		if want := bytes.Repeat([]byte{byte('a' + i)}, len(data)); !bytes.Equal(data, want) {
			t.Fatalf("p%d: foreign bytes in %q", i, data)
		}
	}
}

// BenchmarkMemCrash measures a crash of a 64 MiB file system with 1 MiB of
// unsynced appends: the cost should track the unsynced bytes, not the total.
func BenchmarkMemCrash(b *testing.B) {
	chunk := make([]byte, 64<<10)
	for b.Loop() {
		b.StopTimer()
		m := NewMem()
		f, _ := m.Create("seg")
		m.SyncDir("/")
		off := int64(0)
		for off < 64<<20 {
			f.WriteAt(chunk, off)
			off += int64(len(chunk))
		}
		f.SyncData()
		for range 16 {
			f.WriteAt(chunk, off)
			off += int64(len(chunk))
		}
		b.StartTimer()
		after := m.Crash(CrashOptions{Rand: rand.New(rand.NewPCG(1, 1)), KeepUnsynced: true})
		if after == nil {
			b.Fatal("no state")
		}
	}
}

// BenchmarkMemAppendSync is the engine's hot pattern on MemFS: append a
// batch, fdatasync.
func BenchmarkMemAppendSync(b *testing.B) {
	m := NewMem()
	f, _ := m.Create("seg")
	batch := make([]byte, 4096)
	b.SetBytes(int64(len(batch)))
	off := int64(0)
	for b.Loop() {
		if _, err := f.WriteAt(batch, off); err != nil {
			b.Fatal(err)
		}
		if err := f.SyncData(); err != nil {
			b.Fatal(err)
		}
		off += int64(len(batch))
	}
}
