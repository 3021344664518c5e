package cli

import (
	"errors"
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"
	"github.com/wren-broker/wren/config"
)

func configCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "config",
		Usage: "check and print broker config files",
		Subcommands: []*ucli.Command{
			{
				Name:      "check",
				Usage:     "check a config file: silent and exit 0 when valid, else every problem as FILE:LINE:COL: ... and exit 1",
				ArgsUsage: "FILE",
				Action: func(c *ucli.Context) error {
					if err := wantArgs(c, 1, 1, "one FILE"); err != nil {
						return err
					}
					_, err := config.Load(c.Args().First())
					return reportConfigErrors(env.Stderr, err)
				},
			},
			{
				Name:  "dump",
				Usage: "print the effective config as TOML: settings that differ from the defaults, or --all",
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "all", Usage: "print every setting, defaults included"},
					&ucli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"WREN_CONFIG"},
						Usage: "config file (default: the built-in defaults)"},
				},
				Action: func(c *ucli.Context) error {
					if err := wantArgs(c, 0, 0, "no arguments"); err != nil {
						return err
					}
					cfg := config.Default()
					if path := c.String("config"); path != "" {
						var err error
						if cfg, err = config.Load(path); err != nil {
							return reportConfigErrors(env.Stderr, err)
						}
					}
					_, err := io.WriteString(env.Stdout, cfg.Dump(c.Bool("all")))
					return err
				},
			},
		},
	}
}

// reportConfigErrors prints each problem of an invalid file on its own
// line and exits 1 without a further message; other errors (unreadable
// file, too large) are returned as they are.
func reportConfigErrors(w io.Writer, err error) error {
	if err == nil {
		return nil
	}
	var errs config.Errors
	if !errors.As(err, &errs) {
		return err
	}
	for _, e := range errs {
		fmt.Fprintln(w, e.Error())
	}
	return &exitError{code: 1}
}
