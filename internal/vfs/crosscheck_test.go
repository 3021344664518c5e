package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"pgregory.net/rapid"
)

// TestMemMatchesOS runs random operation sequences on a MemFS and on the
// real file system side by side, with no crash, and fails on the first
// difference in results, errors (by errno) or the files' contents.
// -rapid.checks and -rapid.steps scale it; -short runs a fifth of the checks.
func TestMemMatchesOS(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		osDir, err := os.MkdirTemp(base, "run")
		if err != nil {
			rt.Fatal(err)
		}
		x := &crossCheck{
			rt:    rt,
			mem:   NewMem(),
			os:    Default,
			osDir: osDir,
		}
		defer x.cleanup()
		if err := x.mem.MkdirAll("/w", 0o755); err != nil {
			rt.Fatal(err)
		}
		rt.Repeat(x.actions())
	})
}

// crossPaths are the names operations pick from, relative to each FS's
// root: files and directories at a few depths, so that ENOTDIR, EISDIR and
// ENOTEMPTY all come up.
var crossPaths = []string{"a", "b", "d", "d/a", "d/b", "d/e", "d/e/a"}

type crossHandle struct {
	mem, os File
	name    string
}

type crossLock struct {
	mem, os io.Closer
}

type crossCheck struct {
	rt      *rapid.T
	mem     *MemFS
	os      FS
	osDir   string
	handles []crossHandle
	locks   []crossLock
}

func (x *crossCheck) memPath(rel string) string { return "/w/" + rel }
func (x *crossCheck) osPath(rel string) string  { return filepath.Join(x.osDir, rel) }

func (x *crossCheck) cleanup() {
	for _, h := range x.handles {
		h.os.Close()
	}
	for _, l := range x.locks {
		l.os.Close()
	}
	os.RemoveAll(x.osDir)
}

// errClass reduces an error to what callers may branch on.
func errClass(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "nil"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, fs.ErrClosed):
		return "closed"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, ErrLocked):
		return "locked"
	case strings.Contains(err.Error(), "negative offset"):
		return "negative offset"
	}
	return "other: " + err.Error()
}

func (x *crossCheck) sameErr(what string, memErr, osErr error) {
	x.rt.Helper()
	if m, o := errClass(memErr), errClass(osErr); m != o {
		x.rt.Fatalf("%s: mem error %v, os error %v", what, memErr, osErr)
	}
}

func (x *crossCheck) actions() map[string]func(*rapid.T) {
	pickPath := func(t *rapid.T, label string) string { return rapid.SampledFrom(crossPaths).Draw(t, label) }
	pickHandle := func(t *rapid.T) (int, bool) {
		if len(x.handles) == 0 {
			return 0, false
		}
		return rapid.IntRange(0, len(x.handles)-1).Draw(t, "handle"), true
	}
	open := func(kind string, fn func(FS, string) (File, error)) func(*rapid.T) {
		return func(t *rapid.T) {
			if len(x.handles) >= 8 {
				t.Skip("enough open handles")
			}
			rel := pickPath(t, "path")
			mf, merr := fn(x.mem, x.memPath(rel))
			of, oerr := fn(x.os, x.osPath(rel))
			x.sameErr(kind+" "+rel, merr, oerr)
			if merr == nil {
				x.handles = append(x.handles, crossHandle{mem: mf, os: of, name: rel})
			}
		}
	}
	return map[string]func(*rapid.T){
		"":       func(t *rapid.T) { x.compareTrees() },
		"Create": open("Create", func(f FS, p string) (File, error) { return f.Create(p) }),
		"Open":   open("Open", func(f FS, p string) (File, error) { return f.Open(p) }),
		"OpenReadWrite": open("OpenReadWrite", func(f FS, p string) (File, error) {
			return f.OpenReadWrite(p)
		}),
		"WriteAt": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			data := rapid.SliceOfN(rapid.Byte(), 0, 48).Draw(t, "data")
			off := rapid.Int64Range(-1, 96).Draw(t, "off")
			mn, merr := x.handles[i].mem.WriteAt(data, off)
			on, oerr := x.handles[i].os.WriteAt(data, off)
			x.sameErr("WriteAt "+x.handles[i].name, merr, oerr)
			if mn != on {
				t.Fatalf("WriteAt %s: mem wrote %d, os %d", x.handles[i].name, mn, on)
			}
		},
		"ReadAt": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			n := rapid.IntRange(0, 64).Draw(t, "len")
			off := rapid.Int64Range(-1, 128).Draw(t, "off")
			mbuf, obuf := make([]byte, n), make([]byte, n)
			mn, merr := x.handles[i].mem.ReadAt(mbuf, off)
			on, oerr := x.handles[i].os.ReadAt(obuf, off)
			x.sameErr("ReadAt "+x.handles[i].name, merr, oerr)
			if mn != on || !bytes.Equal(mbuf[:mn], obuf[:on]) {
				t.Fatalf("ReadAt %s: mem %q, os %q", x.handles[i].name, mbuf[:mn], obuf[:on])
			}
		},
		"Truncate": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			size := rapid.Int64Range(-1, 96).Draw(t, "size")
			x.sameErr("Truncate "+x.handles[i].name, x.handles[i].mem.Truncate(size), x.handles[i].os.Truncate(size))
		},
		"SyncData": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			x.sameErr("SyncData "+x.handles[i].name, x.handles[i].mem.SyncData(), x.handles[i].os.SyncData())
		},
		"Sync": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			x.sameErr("Sync "+x.handles[i].name, x.handles[i].mem.Sync(), x.handles[i].os.Sync())
		},
		"Preallocate": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			off := rapid.Int64Range(0, 64).Draw(t, "off")
			n := rapid.Int64Range(0, 4096).Draw(t, "len")
			h := x.handles[i]
			x.sameErr("Preallocate "+h.name, h.mem.Preallocate(off, n), h.os.Preallocate(off, n))
		},
		"Size": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			h := x.handles[i]
			if fi, err := h.os.(*osFile).f.Stat(); err == nil && fi.IsDir() {
				t.Skip("directory sizes differ by design")
			}
			ms, merr := h.mem.Size()
			ls, oerr := h.os.Size()
			x.sameErr("Size "+h.name, merr, oerr)
			if ms != ls {
				t.Fatalf("Size %s: mem %d, os %d", h.name, ms, ls)
			}
		},
		"Close": func(t *rapid.T) {
			i, ok := pickHandle(t)
			if !ok {
				t.Skip("no handle")
			}
			h := x.handles[i]
			x.sameErr("Close "+h.name, h.mem.Close(), h.os.Close())
			// Keep a closed handle now and then: its errors must match too.
			if rapid.Bool().Draw(t, "forget") {
				x.handles = slices.Delete(x.handles, i, i+1)
			}
		},
		"Remove": func(t *rapid.T) {
			rel := pickPath(t, "path")
			x.sameErr("Remove "+rel, x.mem.Remove(x.memPath(rel)), x.os.Remove(x.osPath(rel)))
		},
		"RemoveAll": func(t *rapid.T) {
			rel := pickPath(t, "path")
			x.sameErr("RemoveAll "+rel, x.mem.RemoveAll(x.memPath(rel)), x.os.RemoveAll(x.osPath(rel)))
		},
		"Rename": func(t *rapid.T) {
			from, to := pickPath(t, "from"), pickPath(t, "to")
			x.sameErr("Rename "+from+" "+to,
				x.mem.Rename(x.memPath(from), x.memPath(to)),
				x.os.Rename(x.osPath(from), x.osPath(to)))
		},
		"MkdirAll": func(t *rapid.T) {
			rel := pickPath(t, "path")
			x.sameErr("MkdirAll "+rel, x.mem.MkdirAll(x.memPath(rel), 0o755), x.os.MkdirAll(x.osPath(rel), 0o755))
		},
		"SyncDir": func(t *rapid.T) {
			rel := rapid.SampledFrom(append([]string{"."}, crossPaths...)).Draw(t, "path")
			x.sameErr("SyncDir "+rel, x.mem.SyncDir(x.memPath(rel)), x.os.SyncDir(x.osPath(rel)))
		},
		"List": func(t *rapid.T) {
			rel := pickPath(t, "path")
			mn, merr := x.mem.List(x.memPath(rel))
			on, oerr := x.os.List(x.osPath(rel))
			x.sameErr("List "+rel, merr, oerr)
			if !slices.Equal(mn, on) {
				t.Fatalf("List %s: mem %v, os %v", rel, mn, on)
			}
		},
		"Stat": func(t *rapid.T) {
			rel := pickPath(t, "path")
			mfi, merr := x.mem.Stat(x.memPath(rel))
			ofi, oerr := x.os.Stat(x.osPath(rel))
			x.sameErr("Stat "+rel, merr, oerr)
			if merr == nil && (mfi.Name() != ofi.Name() || mfi.IsDir() != ofi.IsDir() ||
				(!mfi.IsDir() && mfi.Size() != ofi.Size())) {
				t.Fatalf("Stat %s: mem %s dir=%v size=%d, os %s dir=%v size=%d", rel,
					mfi.Name(), mfi.IsDir(), mfi.Size(), ofi.Name(), ofi.IsDir(), ofi.Size())
			}
		},
		"Lock": func(t *rapid.T) {
			rel := pickPath(t, "path")
			ml, merr := x.mem.Lock(x.memPath(rel))
			ol, oerr := x.os.Lock(x.osPath(rel))
			x.sameErr("Lock "+rel, merr, oerr)
			if merr == nil {
				x.locks = append(x.locks, crossLock{mem: ml, os: ol})
			}
		},
		"Unlock": func(t *rapid.T) {
			if len(x.locks) == 0 {
				t.Skip("no lock")
			}
			i := rapid.IntRange(0, len(x.locks)-1).Draw(t, "lock")
			x.sameErr("Unlock", x.locks[i].mem.Close(), x.locks[i].os.Close())
			x.locks = slices.Delete(x.locks, i, i+1)
		},
	}
}

// compareTrees fails unless both trees hold the same names, kinds and
// contents.
func (x *crossCheck) compareTrees() {
	x.rt.Helper()
	if m, o := x.tree(x.mem, "/w"), x.tree(x.os, x.osDir); m != o {
		x.rt.Fatalf("trees differ:\nmem %s\nos  %s", m, o)
	}
}

func (x *crossCheck) tree(fsys FS, root string) string {
	var sb strings.Builder
	var walk func(rel string)
	walk = func(rel string) {
		dir := path.Join(root, rel)
		names, err := fsys.List(dir)
		if err != nil {
			x.rt.Fatalf("List %s: %v", dir, err)
		}
		for _, name := range names {
			p := path.Join(rel, name)
			fi, err := fsys.Stat(path.Join(root, p))
			if err != nil {
				x.rt.Fatalf("Stat %s: %v", p, err)
			}
			if fi.IsDir() {
				fmt.Fprintf(&sb, "%s/ ", p)
				walk(p)
				continue
			}
			data, err := ReadFile(fsys, path.Join(root, p))
			if err != nil {
				x.rt.Fatalf("ReadFile %s: %v", p, err)
			}
			fmt.Fprintf(&sb, "%s=%q ", p, data)
		}
	}
	walk("")
	return sb.String()
}
