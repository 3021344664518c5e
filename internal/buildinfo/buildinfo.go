// Package buildinfo names the running build: its release version and
// commit, for `wren version`, wren_build_info and the start-up log line.
//
// The release build (README, "Building a release binary") passes
// -buildvcs=false for reproducibility, so it stamps both with
//
//	-ldflags "-X github.com/wren-broker/wren/internal/buildinfo.Version=v0.1.0
//	          -X github.com/wren-broker/wren/internal/buildinfo.Commit=$(git rev-parse HEAD)"
//
// Any other build falls back on what the Go toolchain recorded
// (debug.ReadBuildInfo): the module version of `go install ...@v0.1.0`, or
// the version Go derives from the checkout's tags, and vcs.revision and
// vcs.modified of a `go build` inside a git checkout.
package buildinfo

import "runtime/debug"

// Set at link time; empty means "ask the toolchain's build info".
var (
	Version string
	Commit  string
)

// Info is the running build.
type Info struct {
	// Version is the release (v0.1.0), a pseudo-version Go derived from
	// the checkout, or "dev".
	Version string
	// Commit is the git revision, with "-dirty" when the tree had
	// uncommitted changes, or "unknown".
	Commit string
}

// Get returns the running build's version and commit.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, bi)
}

// resolve prefers the link-time values, then the build info.
func resolve(version, commit string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			var rev string
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if rev != "" && dirty {
				rev += "-dirty"
			}
			info.Commit = rev
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}
