package cli

import (
	"fmt"
	"io"
	"runtime"

	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/internal/buildinfo"
)

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func currentVersion() versionInfo {
	b := buildinfo.Get()
	return versionInfo{Version: b.Version, Commit: b.Commit, GoVersion: runtime.Version(),
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
