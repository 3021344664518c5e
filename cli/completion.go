package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Shell completion. bash and zsh ask the binary itself for the words that
// may follow, so they stay right as commands change: the script runs the
// binary the user typed with the words typed so far, the word being
// completed last (empty when none), and completionMarker after them. Main
// answers such a command line from the command tree alone (complete) and
// never runs a command: the words before the marker may be a whole
// `topic delete T`, and a word being completed may be "-" or "--", which a
// flag parser would take for stdin or the end of the flags. urfave's own
// --generate-bash-completion handling did exactly that (`wren topic delete
// T --<TAB>` deleted T), so it is off. fish gets a static script generated
// from the command tree, because urfave's fish generator is left out of
// release builds (the urfave_cli_no_docs tag); it never runs the binary.
//
// Each script registers `wren` and, when it was printed by a binary
// invoked under another name (`./wren completion bash`), that name too.

// completionMarker ends a command line that asks for completions. It is
// urfave's flag name, so a script printed by an older wren still gets
// answers, and never runs a command either.
const completionMarker = "--generate-bash-completion"

const bashCompletion = `# bash completion for wren: source it, or install it as
#   wren completion bash > /etc/bash_completion.d/wren
# It runs the binary typed with the words so far and ` + completionMarker + `,
# which only lists words: it never runs the command being typed.
_wren_complete() {
	local cur opts
	COMPREPLY=()
	cur="${COMP_WORDS[COMP_CWORD]}"
	opts=$("${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:COMP_CWORD}" ` + completionMarker + ` 2>/dev/null) || return 0
	COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
	return 0
}
complete -o bashdefault -o default -F _wren_complete %s
`

const zshCompletion = `#compdef %s
# zsh completion for wren: put it on $fpath as _wren, or
#   source <(wren completion zsh)
# It runs the binary typed with the words so far and ` + completionMarker + `,
# which only lists words: it never runs the command being typed.
_wren() {
	local -a opts
	opts=("${(@f)$(${words[1]} "${(@)words[2,CURRENT]}" ` + completionMarker + ` 2>/dev/null)}")
	if [[ -n "${opts[1]}" ]]; then
		compadd -- "${opts[@]}"
	else
		_files
	fi
}
if [[ "$funcstack[1]" == "_wren" ]]; then
	_wren "$@"
else
	compdef _wren %s
fi
`

// completionNames are the command names a script registers: wren, and the
// name the binary was invoked by if it differs.
func completionNames(c *ucli.Context) []string {
	names := []string{c.App.Name}
	if n, _ := c.App.Metadata[invokedAsKey].(string); n != "" && n != c.App.Name {
		names = append(names, n)
	}
	return names
}

// invokedAsKey holds, in the App's Metadata, the program name Main was
// called with (args[0]).
const invokedAsKey = "invokedAs"

func completionCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "bash:  source <(wren completion bash)   (or write it to /etc/bash_completion.d/wren)\n" +
			"zsh:   source <(wren completion zsh)    (or write it as _wren on $fpath)\n" +
			"fish:  wren completion fish > ~/.config/fish/completions/wren.fish\n" +
			"The script completes `wren`, and also the name this binary was run as (./wren completion bash\n" +
			"completes ./wren too). Completing only lists words: it never runs the command being typed.",
		Action: func(c *ucli.Context) error {
			if err := wantArgs(c, 1, 1, "one shell: bash, zsh or fish"); err != nil {
				return err
			}
			switch shell := c.Args().First(); shell {
			case "bash":
				_, err := fmt.Fprintf(env.Stdout, bashCompletion, shellWords(completionNames(c)))
				return err
			case "zsh":
				names := shellWords(completionNames(c))
				_, err := fmt.Fprintf(env.Stdout, zshCompletion, names, names)
				return err
			case "fish":
				_, err := io.WriteString(env.Stdout, fishCompletion(c.App, completionNames(c)[1:]))
				return err
			default:
				return fmt.Errorf("%w: completion: unknown shell %q: want bash, zsh or fish", ErrUsage, shell)
			}
		},
	}
}

// fishCompletion writes one `complete` line per command and flag: a
// command is offered when its parent's path has been typed and none of
// its siblings has. aliases (such as ./wren) wrap wren's completions.
func fishCompletion(app *ucli.App, aliases []string) string {
	var b strings.Builder
	b.WriteString("# fish completion for wren: wren completion fish > ~/.config/fish/completions/wren.fish\n")
	b.WriteString("complete -c wren -f\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "complete -c %s -w wren\n", fishQuote(a))
	}
	var walk func(path []string, cmds []*ucli.Command)
	walk = func(path []string, cmds []*ucli.Command) {
		var siblings []string
		for _, c := range cmds {
			if !c.Hidden {
				siblings = append(siblings, c.Names()...)
			}
		}
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			cond := fishCondition(path, siblings)
			for _, name := range c.Names() {
				fmt.Fprintf(&b, "complete -c wren -n %s -a %s -d %s\n", fishQuote(cond), name, fishQuote(c.Usage))
			}
			sub := append(append([]string{}, path...), c.Name)
			flagCond := fishCondition(sub, nil)
			for _, f := range c.Flags {
				line := "complete -c wren -n " + fishQuote(flagCond)
				for _, n := range f.Names() {
					if len(n) == 1 {
						line += " -s " + n
					} else {
						line += " -l " + n
					}
				}
				if df, ok := f.(ucli.DocGenerationFlag); ok {
					if df.TakesValue() {
						line += " -r"
					}
					line += " -d " + fishQuote(df.GetUsage())
				}
				b.WriteString(line + "\n")
			}
			walk(sub, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
	return b.String()
}

// fishCondition is true when every word of path has been typed and none
// of the words in exclude has.
func fishCondition(path, exclude []string) string {
	var parts []string
	if len(path) == 0 {
		parts = append(parts, "not __fish_seen_subcommand_from "+strings.Join(exclude, " "))
	} else {
		for _, p := range path {
			parts = append(parts, "__fish_seen_subcommand_from "+p)
		}
		if len(exclude) > 0 {
			parts = append(parts, "not __fish_seen_subcommand_from "+strings.Join(exclude, " "))
		}
	}
	return strings.Join(parts, "; and ")
}

// fishQuote quotes s for fish: single quotes, with \ and ' escaped.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// shellWords quotes names for a POSIX shell command line, one word each.
func shellWords(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		if strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./_-") == "" {
			q[i] = n
		} else {
			q[i] = "'" + strings.ReplaceAll(n, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// isCompletion reports whether args (os.Args shape) ask for completions:
// the marker ends them. Main then calls complete, never a command.
func isCompletion(args []string) bool {
	return len(args) > 1 && args[len(args)-1] == completionMarker
}

// complete prints, one per line, the words that may stand where the last
// word before the marker stands (the word being completed, "" when none):
// with a '-' in front, the flags of the command the words before it name;
// after "--" or a flag that takes a value, nothing (the shell completes
// file names); else the subcommands of that command. It reads the command
// tree only. Shells filter by the word's prefix themselves.
func complete(app *ucli.App, w io.Writer, args []string) {
	words := args[1 : len(args)-1]
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	flags, cmds := app.Flags, app.Commands
	valueNext, positional := false, false
	for i := 0; i < len(words); i++ {
		a := words[i]
		valueNext = false
		switch {
		case a == "--":
			positional = true
		case positional:
		case isFlag(a):
			f := findFlag(flags, flagName(a))
			if f == nil {
				if fs := anyCommandFlags(cmds, flagName(a)); fs != nil {
					f = fs[0]
				}
			}
			if f != nil && !strings.Contains(a, "=") && !isBoolFlag(f) {
				if i+1 < len(words) {
					i++
				} else {
					valueNext = true
				}
			}
		default:
			if c := findCommand(cmds, a); c != nil {
				flags, cmds = c.Flags, c.Subcommands
			}
		}
	}
	switch {
	case positional || valueNext:
	case strings.HasPrefix(cur, "-"):
		for _, f := range flags {
			if vf, ok := f.(ucli.VisibleFlag); ok && !vf.IsVisible() {
				continue
			}
			for _, n := range f.Names() {
				if len(n) == 1 {
					fmt.Fprintln(w, "-"+n)
				} else {
					fmt.Fprintln(w, "--"+n)
				}
			}
		}
		fmt.Fprintln(w, "--help")
	default:
		for _, c := range cmds {
			if !c.Hidden {
				fmt.Fprintln(w, c.Name)
			}
		}
	}
}

func isBoolFlag(f ucli.Flag) bool {
	_, ok := f.(*ucli.BoolFlag)
	return ok
}
