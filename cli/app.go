package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wren-broker/wren/config"
	"io"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/internal/buildinfo"
)

var (
	// ErrServeNotBuilt: `wren serve` ran in a binary whose Env has no Serve
	// hook.
	ErrServeNotBuilt = errors.New("cli: serve is not built into this binary yet")
	// ErrUsage: a flag or argument the command cannot use.
	ErrUsage = errors.New("cli: usage")
)

// Env is everything the commands read and write. main.go passes the
// process's streams; tests pass buffers.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Serve runs the broker as o says until ctx is cancelled, then shuts
	// down and returns. Nil until the broker is wired in: `wren serve` then
	// fails with ErrServeNotBuilt.
	Serve func(ctx context.Context, o ServeOptions) error
}

// ServeOptions are `wren serve`'s flags.
type ServeOptions struct {
	// ConfigPath is the TOML config file; "" means the built-in defaults.
	ConfigPath string
	// LogLevel, when not empty, overrides the config's logging.level
	// (--log-level, WREN_LOG_LEVEL).
	LogLevel string
	// NodeID selects this node in a config file shared by the whole
	// cluster (--node-id, WREN_NODE_ID); config.NoNode when not given.
	NodeID int32
}

// App builds the wren command tree over env. It never calls os.Exit: run it
// with Main, or with RunContext after Interspersed.
func App(env Env) *ucli.App {
	env = env.withDefaults()
	app := &ucli.App{
		Name:      "wren",
		Usage:     "a Kafka-compatible message broker and its admin tools",
		Version:   buildinfo.Get().Version,
		Reader:    env.Stdin,
		Writer:    env.Stdout,
		ErrWriter: env.Stderr,
		// -c k=v and -H k=v values may hold commas; never split them.
		DisableSliceFlagSeparator: true,
		// Errors are printed and turned into exit codes by Main, not by
		// urfave's handler, which would call os.Exit inside tests.
		ExitErrHandler: func(*ucli.Context, error) {},
		// Completion is answered by Main from the command tree
		// (completion.go); urfave's would run the command being typed.
		EnableBashCompletion: false,
		Commands: []*ucli.Command{
			serveCommand(env),
			configCommand(env),
			topicCommand(env),
			produceCommand(env),
			consumeCommand(env),
			offsetsCommand(env),
			groupCommand(env),
			clusterCommand(env),
			uplinkCommand(env),
			partitionsCommand(env),
			userCommand(env),
			aclCommand(env),
			dumpLogCommand(env),
			storageCommand(env),
			perfCommand(env),
			versionCommand(env),
			completionCommand(env),
		},
	}
	// Every deadline of a command counts from here: --timeout bounds the
	// command, not each of its requests (withTimeout).
	app.Before = func(c *ucli.Context) error {
		c.Context = context.WithValue(c.Context, commandStartKey{}, time.Now())
		return nil
	}
	installUsageHandlers(app)
	return app
}

// Main runs the App over args (os.Args shape: args[0] is the program name),
// prints an error to env.Stderr and returns the process exit status: 0 on
// success, the status an error carries (config check: 1), 1 otherwise.
func Main(ctx context.Context, env Env, args []string) int {
	env = env.withDefaults()
	app := App(env)
	if isCompletion(args) {
		complete(app, env.Stdout, args)
		return 0
	}
	if len(args) > 0 {
		app.Metadata = map[string]any{invokedAsKey: args[0]}
	}
	// urfave calls CommandNotFound, and then succeeds, for a word that
	// names no command: remember it and fail.
	var notFound error
	app.CommandNotFound = func(c *ucli.Context, word string) {
		helpName, cmds := app.Name, app.Commands
		if c.Command != nil && c.Command.Name != "" && c.Command.HelpName != "" && c.Command.HelpName != app.Name {
			helpName, cmds = c.Command.HelpName, c.Command.Subcommands
		}
		notFound = unknownCommand(helpName, cmds, word)
	}
	err := app.RunContext(ctx, Interspersed(app, args))
	if err == nil {
		err = notFound
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printError(env.Stderr, ee.err)
		}
		return ee.code
	}
	return printError(env.Stderr, err)
}

func (env Env) withDefaults() Env {
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	return env
}

// exitError ends the program with status code. err is printed unless nil:
// nil means the command has already said what went wrong (config check
// prints every problem itself).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func serveCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "serve",
		Usage: "run a broker",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"WREN_CONFIG"},
				Usage: "TOML config file (default: built-in single-node defaults)"},
			&ucli.StringFlag{Name: "log-level", EnvVars: []string{"WREN_LOG_LEVEL"},
				Usage: "debug, info, warn or error; overrides the config's logging.level"},
			nodeIDFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: serve takes no arguments, got %q", ErrUsage, c.Args().Slice())
			}
			if env.Serve == nil {
				return ErrServeNotBuilt
			}
			level := c.String("log-level")
			switch level {
			case "", "debug", "info", "warn", "error":
			default:
				return fmt.Errorf("%w: --log-level (or WREN_LOG_LEVEL) %q: want debug, info, warn or error", ErrUsage, level)
			}
			nodeID, err := nodeIDOf(c)
			if err != nil {
				return err
			}
			return env.Serve(c.Context, ServeOptions{ConfigPath: c.String("config"), LogLevel: level, NodeID: nodeID})
		},
	}
}

// nodeIDFlag selects this node in a config file shared by the cluster.
func nodeIDFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "node-id", EnvVars: []string{"WREN_NODE_ID"},
		Usage: "this node's id in a config file that lists every voter (default: node.id, else the voter at an address of this host)"}
}

// nodeConfig is the config of the node a command acts on, found as serve
// finds it (config.LoadNode): the file at path ("" for the built-in
// defaults) and --node-id or WREN_NODE_ID. A file with problems is
// reported as config check reports it.
func nodeConfig(c *ucli.Context, env Env, path string) (*config.Config, error) {
	nodeID, err := nodeIDOf(c)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadNode(path, nodeID)
	if err != nil {
		return nil, reportConfigErrors(env.Stderr, err)
	}
	return cfg, nil
}

func nodeIDOf(c *ucli.Context) (int32, error) {
	s := c.String("node-id")
	if s == "" {
		return config.NoNode, nil
	}
	id, err := config.ParseNodeID(s)
	if err != nil {
		// Without the config package's prefix: the flag names the subject.
		return config.NoNode, fmt.Errorf("%w: --node-id (or WREN_NODE_ID): %s", ErrUsage, strings.TrimPrefix(err.Error(), "config: "))
	}
	return id, nil
}

// Flags shared by every client command. New values each time: urfave keeps
// parse state in flag values, so one instance must not serve two commands.

const (
	defaultBootstrap = "127.0.0.1:9092"
	defaultTimeout   = 30 * time.Second
)

func clientFlags(extra ...ucli.Flag) []ucli.Flag {
	flags := append([]ucli.Flag{bootstrapFlag(),
		&ucli.StringFlag{Name: "format", Value: "text", Usage: "output format: text or json"},
	}, tlsFlags()...)
	return append(flags, extra...)
}

func bootstrapFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "bootstrap-server", Aliases: []string{"b", "brokers"}, EnvVars: []string{"WREN_BROKERS"},
		Value: defaultBootstrap, Usage: "comma-separated host:port list of brokers to bootstrap from"}
}

// timeoutFlag bounds a command's requests, all of them together, so an
// absent broker is an error rather than a hang.
func timeoutFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "timeout", Value: defaultTimeout,
		Usage: "give up on the broker after this long, counted from the start of the command " +
			"(produce: also from each line read; perf produce: from the last acknowledgement; cluster health --watch: from each look)"}
}

type outputFormat int

const (
	formatText outputFormat = iota
	formatJSON
)

func formatOf(c *ucli.Context) (outputFormat, error) {
	switch f := c.String("format"); f {
	case "", "text":
		return formatText, nil
	case "json":
		return formatJSON, nil
	default:
		return formatText, fmt.Errorf("%w: --format %q: want text or json", ErrUsage, f)
	}
}

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printResult prints v as JSON, or calls text to print the command's text
// lines.
func printResult(w io.Writer, format outputFormat, v any, text func(w io.Writer)) error {
	if format == formatJSON {
		return writeJSON(w, v)
	}
	text(w)
	return nil
}

// withTimeout is the context of a command's requests: it ends --timeout
// after the command started, however many requests share it, so a
// command that asks several things (produce's metadata check and its
// deliveries, consume's checks) still ends within --timeout.
func withTimeout(c *ucli.Context) (context.Context, context.CancelFunc) {
	return timeoutFrom(c, commandStart(c.Context))
}

// timeoutFrom is the context of requests that must end --timeout after
// start.
func timeoutFrom(c *ucli.Context, start time.Time) (context.Context, context.CancelFunc) {
	d := c.Duration("timeout")
	if d <= 0 {
		return context.WithCancel(c.Context)
	}
	return context.WithDeadline(c.Context, start.Add(d))
}

type commandStartKey struct{}

// commandStart is when the command began (App's Before), else now.
func commandStart(ctx context.Context) time.Time {
	if t, ok := ctx.Value(commandStartKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// wantArgs checks the number of positional arguments.
func wantArgs(c *ucli.Context, min, max int, what string) error {
	n := c.NArg()
	if n < min || (max >= 0 && n > max) {
		return fmt.Errorf("%w: %s: want %s, got %d argument(s)", ErrUsage, commandName(c), what, n)
	}
	return nil
}

// commandName is the command's name for an error message: "storage
// check", not "wren storage check", since the line starts "wren: ".
func commandName(c *ucli.Context) string {
	return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
}

// argsFormat checks the number of positional arguments, then reads
// --format: the checks every command with a fixed arity starts with.
func argsFormat(c *ucli.Context, min, max int, what string) (outputFormat, error) {
	if err := wantArgs(c, min, max, what); err != nil {
		return formatText, err
	}
	return formatOf(c)
}

// splitKV splits "k=v" at the first '='.
func splitKV(s, flag string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("%w: %s %q: want key=value", ErrUsage, flag, s)
	}
	return k, v, nil
}
