package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Interspersed returns args with the flags of the command being run moved in
// front of its positional arguments, so that `wren topic create T -p 3` means
// what it means to Kafka's and rpk's users. urfave/cli v2 (Go's flag
// package) stops parsing flags at the first positional argument and would
// take "-p" and "3" as more topic names.
//
// It walks the command path (args[1:] words that name subcommands), then
// splits the rest into flags, with the value of every flag that takes one,
// and positionals. Everything after "--" stays positional; a positional that
// starts with '-' (such as "-" for stdin) keeps a "--" in front of it.
// Unknown flags are left for urfave to reject.
func Interspersed(app *ucli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	// carried are flags given before the command they belong to
	// (`wren -b HOST topic list`): they move after the command path, where
	// the command that defines them parses them.
	var carried []string
	i := 1
	for i < len(args) {
		a := args[i]
		if a == "--" {
			break
		}
		if isFlag(a) {
			if findFlag(flags, flagName(a)) == nil && len(cmds) > 0 {
				n := flagWidth(anyCommandFlags(cmds, flagName(a)), args[i:])
				carried = append(carried, args[i:i+n]...)
				i += n
				continue
			}
			n := flagWidth(flags, args[i:])
			out = append(out, args[i:i+n]...)
			i += n
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		out = append(out, a)
		flags, cmds = cmd.Flags, cmd.Subcommands
		i++
	}

	named := carried
	var positional []string
	dashed := false
	for i < len(args) {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			dashed = true
			break
		}
		if isFlag(a) {
			n := flagWidth(flags, args[i:])
			named = append(named, args[i:i+n]...)
			i += n
			continue
		}
		positional = append(positional, a)
		i++
	}
	out = append(out, named...)
	if dashed || anyDashed(positional) {
		out = append(out, "--")
	}
	return append(out, positional...)
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// flagName is a flag word's name: "-b" and "--bootstrap-server=x" give
// "b" and "bootstrap-server".
func flagName(a string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// anyCommandFlags finds the flag called name in cmds or their subcommands,
// for a flag given before its command: every command that has a flag of
// that name gives it the same kind (-b, --format, --timeout), so the first
// one found tells whether it takes a value.
func anyCommandFlags(cmds []*ucli.Command, name string) []ucli.Flag {
	for _, c := range cmds {
		if f := findFlag(c.Flags, name); f != nil {
			return []ucli.Flag{f}
		}
		if fs := anyCommandFlags(c.Subcommands, name); fs != nil {
			return fs
		}
	}
	return nil
}

func anyDashed(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return true
		}
	}
	return false
}

// flagWidth is how many words the flag at args[0] spans: 2 when it takes a
// value given as the next word, else 1.
func flagWidth(flags []ucli.Flag, args []string) int {
	name := strings.TrimLeft(args[0], "-")
	if strings.Contains(name, "=") {
		return 1
	}
	f := findFlag(flags, name)
	if f == nil || len(args) < 2 {
		return 1
	}
	if _, isBool := f.(*ucli.BoolFlag); isBool {
		return 1
	}
	return 2
}

func findFlag(flags []ucli.Flag, name string) ucli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
