package cli

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionOfBuilds builds wren the two documented ways and asks each
// `wren version`: the release script (static, -buildvcs=false, stamped
// with -ldflags -X) and a plain `go build` in the git checkout (stamped by
// Go with vcs.revision).
func TestVersionOfBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the wren binary twice")
	}
	dir := t.TempDir()
	version := func(bin string) versionInfo {
		t.Helper()
		out, err := exec.Command(bin, "version", "--format", "json").Output()
		if err != nil {
			t.Fatalf("%s version: %v", bin, err)
		}
		var v versionInfo
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s version: %v\n%s", bin, err, out)
		}
		return v
	}

	release := filepath.Join(dir, "wren-release")
	build := exec.Command("../scripts/build.sh", release)
	build.Env = append(os.Environ(), "WREN_VERSION=v9.8.7", "WREN_COMMIT=0123456789abcdef0123456789abcdef01234567")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", err, out)
	}
	if v := version(release); v.Version != "v9.8.7" || v.Commit != "0123456789abcdef0123456789abcdef01234567" {
		t.Fatalf("release build says %+v", v)
	}
	f, err := elf.Open(release)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the release build is dynamically linked (it has a PT_INTERP header)")
		}
	}

	// A plain go build stamps vcs.revision only in a checkout whose .git
	// is a directory (not in a git worktree), so build in a fresh clone of
	// the commit under test.
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): no VCS stamp to check", err)
	}
	commit := strings.TrimSpace(string(head))
	clone := filepath.Join(dir, "clone")
	for _, args := range [][]string{
		{"clone", "--quiet", "--no-checkout", "..", clone},
		{"-C", clone, "checkout", "--quiet", commit},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	plain := filepath.Join(dir, "wren-plain")
	// -buildvcs=true: the default, unless GOFLAGS turned it off here.
	gobuild := exec.Command("go", "build", "-buildvcs=true", "-o", plain, ".")
	gobuild.Dir = clone
	if out, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if v := version(plain); v.Commit != commit || !strings.HasPrefix(v.Version, "v") {
		t.Fatalf("plain go build of %s says %+v", commit, v)
	}
}
