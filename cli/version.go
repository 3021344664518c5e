package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v2"
)

// Version and Commit are set at link time:
//
//	-ldflags "-X github.com/wren-broker/wren/cli.Version=v0.1.0 -X github.com/wren-broker/wren/cli.Commit=abc1234"
var (
	Version = "dev"
	Commit  = ""
)

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func currentVersion() versionInfo {
	commit := Commit
	if commit == "" {
		commit = "unknown"
		// A build with VCS stamping (not the release build, which uses
		// -buildvcs=false for reproducibility) knows its revision.
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					commit = s.Value
				}
			}
		}
	}
	return versionInfo{Version: Version, Commit: commit, GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH}
}

func versionCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the version, commit, Go version and platform",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "format", Value: "text", Usage: "output format: text or json"},
		},
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			v := currentVersion()
			return printResult(env.Stdout, format, v, func(w io.Writer) {
				fmt.Fprintf(w, "Version:    %s\nCommit:     %s\nGo version: %s\nOS/Arch:    %s/%s\n",
					v.Version, v.Commit, v.GoVersion, v.OS, v.Arch)
			})
		},
	}
}
