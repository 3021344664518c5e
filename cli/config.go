package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	ucli "github.com/urfave/cli/v2"
	"github.com/wren-broker/wren/config"
)

// configFileFlag names the config file as serve does (-c/--config,
// WREN_CONFIG). config check and config dump also take the file as their
// one argument; both forms mean the same.
func configFileFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"WREN_CONFIG"},
		Usage: "config file, also accepted as the argument FILE"}
}

func configCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "config",
		Usage: "check and print broker config files",
		Subcommands: []*ucli.Command{
			{
				Name: "check",
				Usage: "check a config file: exit 0 when valid, else every problem as FILE:LINE:COL: ... and exit 1; " +
					"settings that are accepted but not in effect yet are warned about, by name, on stderr",
				ArgsUsage: "FILE (or --config FILE)",
				Flags: []ucli.Flag{configFileFlag(), nodeIDFlag(),
					&ucli.StringFlag{Name: "format", Value: "text", Usage: "output format: text or json"}},
				Action: func(c *ucli.Context) error {
					format, err := formatOf(c)
					if err != nil {
						return err
					}
					path, err := configPath(c, true)
					if err != nil {
						return err
					}
					nodeID, err := nodeIDOf(c)
					if err != nil {
						return err
					}
					cfg, err := config.LoadWith(path, config.Options{NodeID: nodeID})
					if err == nil {
						if serveErrs := cfg.ServeErrors(); len(serveErrs) > 0 {
							err = serveErrs
						}
					}
					if format == formatJSON {
						return printConfigCheckJSON(env.Stdout, path, cfg, err)
					}
					if err != nil {
						return reportConfigErrors(env.Stderr, err)
					}
					for _, w := range cfg.Warnings() {
						fmt.Fprintln(env.Stderr, w.String())
					}
					return nil
				},
			},
			{
				Name:      "dump",
				Usage:     "print the effective config of a node as TOML: settings that differ from the defaults, or --all",
				ArgsUsage: "[FILE] (or --config FILE; default: the built-in defaults)",
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "all", Usage: "print every setting, defaults included"},
					configFileFlag(), nodeIDFlag(),
					&ucli.StringFlag{Name: "format", Value: "text", Usage: "output format: text (TOML) or json"},
				},
				Action: func(c *ucli.Context) error {
					format, err := formatOf(c)
					if err != nil {
						return err
					}
					path, err := configPath(c, false)
					if err != nil {
						return err
					}
					// The node's effective config: its [node.N.*] tables
					// applied, as serve would run it.
					cfg, err := nodeConfig(c, env, path)
					if err != nil {
						return err
					}
					if format == formatJSON {
						return writeJSON(env.Stdout, cfg.Settings(c.Bool("all")))
					}
					_, err = io.WriteString(env.Stdout, cfg.Dump(c.Bool("all")))
					return err
				},
			},
		},
	}
}

// configPath is the file named by the argument or by --config (either,
// or both when they agree); "" when neither names one and none is
// required.
func configPath(c *ucli.Context, required bool) (string, error) {
	if c.NArg() > 1 {
		return "", fmt.Errorf("%w: %s: want one FILE, got %d arguments", ErrUsage, commandName(c), c.NArg())
	}
	arg, flag := c.Args().First(), c.String("config")
	// WREN_CONFIG is a default: an argument overrides it, while an
	// argument and a different --config on the command line contradict.
	fromEnv := flag != "" && flag == os.Getenv("WREN_CONFIG")
	switch {
	case arg != "" && flag != "" && arg != flag && !fromEnv:
		return "", fmt.Errorf("%w: %s: FILE %s and --config %s name different files", ErrUsage, commandName(c), arg, flag)
	case arg != "":
		return arg, nil
	case flag == "" && required:
		return "", fmt.Errorf("%w: %s: want one FILE (or --config FILE)", ErrUsage, c.Command.HelpName)
	}
	return flag, nil
}

type configProblem struct {
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

type configCheckResult struct {
	File     string          `json:"file"`
	Valid    bool            `json:"valid"`
	Errors   []configProblem `json:"errors"`
	Warnings []configProblem `json:"warnings"`
}

// printConfigCheckJSON prints the check's result as one JSON document on
// stdout, and exits 1 when the file is invalid, as the text form does.
func printConfigCheckJSON(w io.Writer, path string, cfg *config.Config, loadErr error) error {
	res := configCheckResult{File: path, Valid: loadErr == nil, Errors: []configProblem{}, Warnings: []configProblem{}}
	if loadErr != nil {
		var errs config.Errors
		if !errors.As(loadErr, &errs) {
			return loadErr
		}
		for _, e := range errs {
			res.Errors = append(res.Errors, configProblem{Line: e.Pos.Line, Column: e.Pos.Column, Key: e.Key, Message: e.Msg})
		}
	} else {
		for _, x := range cfg.Warnings() {
			res.Warnings = append(res.Warnings, configProblem{Line: x.Pos.Line, Column: x.Pos.Column, Key: x.Key,
				Message: x.Message()})
		}
	}
	if err := writeJSON(w, res); err != nil {
		return err
	}
	if !res.Valid {
		return &exitError{code: 1}
	}
	return nil
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
