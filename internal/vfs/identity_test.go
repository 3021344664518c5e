package vfs

import (
	"testing"
)

// TestFileIdentity: a file's identity stays while nothing changes it, and
// changes with a write, a truncation, a rename over it and a rename of a
// new version into its place, on the OS and the memory FS alike.
func TestFileIdentity(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   FS
		dir  string
	}{{"os", NewOS(), t.TempDir()}, {"mem", NewMem(), "/d"}} {
		t.Run(c.name, func(t *testing.T) {
			fsys, dir := c.fs, c.dir
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := dir + "/f"
			ident := func() FileIdentity {
				t.Helper()
				_, id, ok, err := StatIdentity(fsys, name)
				if err != nil || !ok {
					t.Fatalf("identity of %s: ok=%v err=%v", name, ok, err)
				}
				return id
			}
			if err := WriteFileAtomic(fsys, name, []byte("one")); err != nil {
				t.Fatal(err)
			}
			a := ident()
			if b := ident(); b != a {
				t.Fatalf("identity moved without a change: %+v then %+v", a, b)
			}
			if _, err := ReadFile(fsys, name); err != nil {
				t.Fatal(err)
			}
			if b := ident(); b != a {
				t.Fatalf("a read changed the identity: %+v then %+v", a, b)
			}
			if err := WriteFileAtomic(fsys, name, []byte("one")); err != nil {
				t.Fatal(err)
			}
			b := ident()
			if b == a {
				t.Fatalf("a new version of the file kept the identity %+v", a)
			}
			if c.name == "os" {
				// A write in place within one clock tick of the stat
				// keeps the ctime on kernels without fine-grained
				// timestamps; the engine never relies on that case alone
				// (the size, and the marker's new inode, tell it apart).
				return
			}
			f, err := fsys.OpenReadWrite(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if c := ident(); c == b || c.Ino != b.Ino {
				t.Fatalf("a write in place: identity %+v then %+v, want the same inode and a new ctime", b, c)
			}
		})
	}
}

// TestMemWholeSecondCtime: under SetWholeSecondCtime every ctime is whole.
func TestMemWholeSecondCtime(t *testing.T) {
	m := NewMem()
	m.SetWholeSecondCtime(true)
	if err := WriteFileAtomic(m, "/f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	_, id, ok, err := StatIdentity(m, "/f")
	if err != nil || !ok || !id.WholeSecond() {
		t.Fatalf("identity %+v ok=%v err=%v, want a whole-second ctime", id, ok, err)
	}
	m2 := NewMem()
	if err := WriteFileAtomic(m2, "/f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, id, _, _ := StatIdentity(m2, "/f"); id.WholeSecond() {
		t.Fatalf("identity %+v: whole second by default", id)
	}
}
