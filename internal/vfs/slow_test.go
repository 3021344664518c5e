package vfs

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestSlowFSDelaysSyncsOnly: with a delay set, SyncData, Sync and SyncDir
// each wait it once before they run, and no other operation waits; with
// the delay cleared nothing waits. The waits are recorded, not taken.
func TestSlowFSDelaysSyncsOnly(t *testing.T) {
	var waits []time.Duration
	old := sleep
	sleep = func(d time.Duration) { waits = append(waits, d) }
	t.Cleanup(func() { sleep = old })

	dir := t.TempDir()
	s := NewSlowFS(NewOS())
	s.SetSyncDelay(100 * time.Millisecond)
	name := filepath.Join(dir, "f")
	f, err := s.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 5), 0); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 0 {
		t.Fatalf("create, write and read waited %v", waits)
	}
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"SyncData", f.SyncData},
		{"Sync", f.Sync},
		{"SyncDir", func() error { return s.SyncDir(dir) }},
	} {
		before := len(waits)
		if err := op.call(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		if got := waits[before:]; !slices.Equal(got, []time.Duration{100 * time.Millisecond}) {
			t.Fatalf("%s waited %v, want one wait of 100ms", op.name, got)
		}
	}
	s.SetSyncDelay(0)
	before := len(waits)
	if err := errors.Join(f.SyncData(), f.Sync(), s.SyncDir(dir), f.Close()); err != nil {
		t.Fatal(err)
	}
	if len(waits) != before {
		t.Fatalf("syncs waited %v with no delay set", waits[before:])
	}
	got, err := ReadFile(s, name)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read back %q, %v", got, err)
	}
}

// TestSlowFSKeepsAbilities: a SlowFS over the OS hands out files with
// descriptors (sendfile still serves reads) and reports free space; over a
// MemFS without a capacity it has neither, as the MemFS has not.
func TestSlowFSKeepsAbilities(t *testing.T) {
	dir := t.TempDir()
	s := NewSlowFS(NewOS())
	f, err := s.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(Fder); !ok {
		t.Fatal("a SlowFS file over the OS is not an Fder")
	}
	if _, err := StatFS(s, dir); err != nil {
		t.Fatalf("StatFS over the OS: %v", err)
	}

	m := NewSlowFS(NewMem())
	mf, err := m.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if _, ok := mf.(Fder); ok {
		t.Fatal("a SlowFS file over a MemFS claims a descriptor")
	}
	if _, err := StatFS(m, "f"); !errors.Is(err, ErrStatFSUnsupported) {
		t.Fatalf("StatFS over a MemFS without capacity: %v, want ErrStatFSUnsupported", err)
	}
}
