package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		{"no build info", "", "", nil, Info{"dev", "unknown"}},
		{"release build: -X, no VCS", "v0.1.0", "abc123", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Info{"v0.1.0", "abc123"}},
		{"-X wins over VCS", "v0.1.0", "abc123", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-x"}, Settings: vcs("def", "false")}, Info{"v0.1.0", "abc123"}},
		{"go build in a checkout", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab"}, Settings: vcs("0123456789abcdef", "false")},
			Info{"v0.0.0-20260101000000-0123456789ab", "0123456789abcdef"}},
		{"dirty checkout", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123", "true")}, Info{"dev", "0123-dirty"}},
		{"go install @version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, Info{"v0.2.0", "unknown"}},
	} {
		if got := resolve(tc.version, tc.commit, tc.bi); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
