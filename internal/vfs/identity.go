package vfs

import (
	"os"
	"syscall"
)

// FileIdentity tells one version of a file apart from another: its inode
// number and its status-change time (ctime) in nanoseconds. Every change to
// a file's data, size, links or name (a write, a truncation, a rename onto
// it or of it) sets its ctime; no system call sets it back. So a file
// whose identity and size are what they were has not been replaced or
// changed since, as far as a file system whose ctime has sub-second
// resolution can tell (WholeSecond).
type FileIdentity struct {
	Ino     uint64
	CtimeNs int64
}

// WholeSecond says whether the ctime has no sub-second part: the mark of a
// file system that keeps whole seconds only, where two versions of a file
// written within one second cannot be told apart. A file system with
// nanosecond times shows a ctime on a whole second once in a billion.
func (id FileIdentity) WholeSecond() bool { return id.CtimeNs%1_000_000_000 == 0 }

// IdentityOf returns the identity of the file fi describes (from a Stat of
// any FS of this package), or ok=false when the FS keeps none.
func IdentityOf(fi os.FileInfo) (id FileIdentity, ok bool) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t: // the OS FS: stat(2)
		return FileIdentity{Ino: uint64(st.Ino), CtimeNs: int64(st.Ctim.Sec)*1_000_000_000 + int64(st.Ctim.Nsec)}, true // int32 fields on 32-bit ARM
	case *memStat:
		return FileIdentity{Ino: st.ino, CtimeNs: st.ctimeNs}, true
	}
	return FileIdentity{}, false
}

// StatIdentity is Stat and IdentityOf: the size and identity of name.
func StatIdentity(fsys FS, name string) (size int64, id FileIdentity, ok bool, err error) {
	fi, err := fsys.Stat(name)
	if err != nil {
		return 0, FileIdentity{}, false, err
	}
	id, ok = IdentityOf(fi)
	return fi.Size(), id, ok, nil
}
