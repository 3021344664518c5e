package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Shell completion. bash and zsh ask the binary itself for the words that
// may follow (urfave's --generate-bash-completion), so they stay right as
// commands change; fish gets a static script generated from the command
// tree here, because urfave's own fish generator is left out of release
// builds (the urfave_cli_no_docs tag).

const bashCompletion = `# bash completion for wren: source it, or install it as
#   wren completion bash > /etc/bash_completion.d/wren
_wren_complete() {
	local cur words cword req opts
	COMPREPLY=()
	cur="${COMP_WORDS[COMP_CWORD]}"
	words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ "$cur" == -* ]]; then
		req=("${words[@]}" "$cur" --generate-bash-completion)
	else
		req=("${words[@]}" --generate-bash-completion)
	fi
	opts=$("${req[@]}" 2>/dev/null)
	COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
	return 0
}
complete -o bashdefault -o default -F _wren_complete wren
`

const zshCompletion = `#compdef wren
# zsh completion for wren: put it on $fpath as _wren, or
#   source <(wren completion zsh)
_wren() {
	local -a opts
	local cur=${words[-1]}
	if [[ "$cur" == -* ]]; then
		opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
	else
		opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
	fi
	if [[ "${opts[1]}" != "" ]]; then
		_describe 'values' opts
	else
		_files
	fi
}
if [[ "$funcstack[1]" == "_wren" ]]; then
	_wren "$@"
else
	compdef _wren wren
fi
`

func completionCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "bash:  source <(wren completion bash)   (or write it to /etc/bash_completion.d/wren)\n" +
			"zsh:   source <(wren completion zsh)    (or write it as _wren on $fpath)\n" +
			"fish:  wren completion fish > ~/.config/fish/completions/wren.fish",
		Action: func(c *ucli.Context) error {
			if err := wantArgs(c, 1, 1, "one shell: bash, zsh or fish"); err != nil {
				return err
			}
			switch shell := c.Args().First(); shell {
			case "bash":
				_, err := io.WriteString(env.Stdout, bashCompletion)
				return err
			case "zsh":
				_, err := io.WriteString(env.Stdout, zshCompletion)
				return err
			case "fish":
				_, err := io.WriteString(env.Stdout, fishCompletion(c.App))
				return err
			default:
				return fmt.Errorf("%w: completion: unknown shell %q: want bash, zsh or fish", ErrUsage, shell)
			}
		},
	}
}

// fishCompletion writes one `complete` line per command and flag: a
// command is offered when its parent's path has been typed and none of
// its siblings has.
func fishCompletion(app *ucli.App) string {
	var b strings.Builder
	b.WriteString("# fish completion for wren: wren completion fish > ~/.config/fish/completions/wren.fish\n")
	b.WriteString("complete -c wren -f\n")
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

// completionArgs prepares args for urfave: flags reordered as Interspersed
// does, but a trailing --generate-bash-completion (a completion script
// asking what may follow) stays last, where urfave looks for it.
func completionArgs(app *ucli.App, args []string) []string {
	const flag = "--generate-bash-completion"
	if n := len(args); n > 1 && args[n-1] == flag {
		return append(Interspersed(app, args[:n-1]), flag)
	}
	return Interspersed(app, args)
}
