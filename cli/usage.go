package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Exit statuses: 1 for a failed command, 2 for a command line that could
// not be understood (an unknown command or flag, a wrong argument), as Go's
// flag package and most Unix tools do.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a command line that could not be parsed: Main prints it
// with a one-line usage of the command and a pointer to --help, on stderr,
// instead of urfave's whole help on stdout.
type usageError struct {
	err error
	// usage is the command's synopsis, helpName its full name
	// ("wren topic list").
	usage, helpName string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return ErrUsage }

// installUsageHandlers makes every command report a bad flag as a
// usageError rather than print its help.
func installUsageHandlers(app *ucli.App) {
	app.OnUsageError = func(c *ucli.Context, err error, _ bool) error {
		return &usageError{err: err, usage: app.Name + " [command] [options] [arguments...]", helpName: app.Name}
	}
	var walk func(parent string, cmds []*ucli.Command)
	walk = func(parent string, cmds []*ucli.Command) {
		for _, cmd := range cmds {
			name := parent + " " + cmd.Name
			synopsis := name + " [options]"
			if len(cmd.Subcommands) > 0 {
				synopsis = name + " COMMAND [options]"
			}
			if cmd.ArgsUsage != "" {
				synopsis += " " + cmd.ArgsUsage
			}
			cmd.OnUsageError = func(_ *ucli.Context, err error, _ bool) error {
				return &usageError{err: err, usage: synopsis, helpName: name}
			}
			walk(name, cmd.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
}

// unknownCommand is the error for a word that names no command: it says
// which command was closest, if one is close enough to be a typo.
func unknownCommand(helpName string, cmds []*ucli.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, helpName)
	if best := closestCommand(cmds, word); best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return &usageError{err: errors.New(msg), usage: helpName + " COMMAND [options]", helpName: helpName}
}

// closestCommand is the command name (or alias) nearest to word by edit
// distance, when the distance is small for the word's length; "" if none.
func closestCommand(cmds []*ucli.Command, word string) string {
	best, bestDist := "", -1
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, name := range c.Names() {
			d := editDistance(strings.ToLower(word), name)
			if bestDist < 0 || d < bestDist {
				best, bestDist = c.Name, d
			}
		}
	}
	// A prefix ("top" for topic) or up to a third of the letters wrong.
	if best != "" && (strings.HasPrefix(best, word) || bestDist <= max(1, len(word)/3)) {
		return best
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions, the commonest typo) between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// errorText is an error as the user reads it: without the package
// prefixes that wrap it on the way up ("cli: "), which say nothing to
// someone running wren.
func errorText(err error) string {
	return strings.ReplaceAll(err.Error(), "cli: ", "")
}

// printError prints err on w as Main reports it and returns the exit
// status.
func printError(w io.Writer, err error) int {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "wren: %s\nusage: %s\nRun '%s --help' for more.\n", errorText(ue.err), ue.usage, ue.helpName)
		return exitUsage
	}
	fmt.Fprintf(w, "wren: %s\n", errorText(err))
	if errors.Is(err, ErrUsage) {
		return exitUsage
	}
	return exitFailure
}
