package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"text/tabwriter"
	"text/template"

	ucli "github.com/urfave/cli/v2"
)

// urfave/cli's help is rendered in plain Go (third_party/urfave-cli-v2,
// help_render.go) instead of with text/template, which would cost the
// release binary 2.6 MB. These tests render every help screen both ways
// and require the same bytes: templateHelp below is urfave v2.27.7's own
// printHelpCustom, run over its own templates.

// templateHelp is urfave/cli v2.27.7's printHelpCustom with no custom
// functions: its templates and template functions, run by text/template.
func templateHelp(out io.Writer, templ string, data any) error {
	const maxLineLength = 10000
	offset := func(input string, fixed int) int { return len(input) + fixed }
	indent := func(spaces int, v string) string {
		pad := strings.Repeat(" ", spaces)
		return pad + strings.Replace(v, "\n", "\n"+pad, -1)
	}
	funcMap := template.FuncMap{
		"join":     strings.Join,
		"subtract": func(a, b int) int { return a - b },
		"indent":   indent,
		"nindent":  func(spaces int, v string) string { return "\n" + indent(spaces, v) },
		"trim":     strings.TrimSpace,
		"wrap":     func(input string, offset int) string { return templateWrap(input, offset, maxLineLength) },
		"offset":   offset,
		"offsetCommands": func(cmds []*ucli.Command, fixed int) int {
			m := 0
			for _, cmd := range cmds {
				m = max(m, len(strings.Join(cmd.Names(), ", ")))
			}
			return m + fixed
		},
	}
	w := tabwriter.NewWriter(out, 1, 8, 2, ' ', 0)
	t, err := template.New("help").Funcs(funcMap).Parse(templ)
	if err != nil {
		return err
	}
	for name, value := range map[string]string{
		"helpNameTemplate":                  `{{$v := offset .HelpName 6}}{{wrap .HelpName 3}}{{if .Usage}} - {{wrap .Usage $v}}{{end}}`,
		"usageTemplate":                     `{{if .UsageText}}{{wrap .UsageText 3}}{{else}}{{.HelpName}}{{if .VisibleFlags}} [command options]{{end}}{{if .ArgsUsage}} {{.ArgsUsage}}{{else}}{{if .Args}} [arguments...]{{end}}{{end}}{{end}}`,
		"descriptionTemplate":               `{{wrap .Description 3}}`,
		"visibleCommandTemplate":            "{{ $cv := offsetCommands .VisibleCommands 5}}{{range .VisibleCommands}}\n   {{$s := join .Names \", \"}}{{$s}}{{ $sp := subtract $cv (offset $s 3) }}{{ indent $sp \"\"}}{{wrap .Usage $cv}}{{end}}",
		"copyrightTemplate":                 `{{wrap .Copyright 3}}`,
		"visibleFlagCategoryTemplate":       visibleFlagCategoryTemplate,
		"visibleFlagTemplate":               "{{range $i, $e := .VisibleFlags}}\n   {{wrap $e.String 6}}{{end}}",
		"visibleGlobalFlagCategoryTemplate": strings.Replace(visibleFlagCategoryTemplate, "OPTIONS", "GLOBAL OPTIONS", -1),
		"authorsTemplate":                   "{{with $length := len .Authors}}{{if ne 1 $length}}S{{end}}{{end}}:\n   {{range $index, $author := .Authors}}{{if $index}}\n   {{end}}{{$author}}{{end}}",
		"visibleCommandCategoryTemplate":    "{{range .VisibleCategories}}{{if .Name}}\n   {{.Name}}:{{range .VisibleCommands}}\n     {{join .Names \", \"}}{{\"\\t\"}}{{.Usage}}{{end}}{{else}}{{template \"visibleCommandTemplate\" .}}{{end}}{{end}}",
	} {
		if _, err := t.New(name).Parse(value); err != nil {
			return err
		}
	}
	if err := t.Execute(w, data); err != nil {
		return err
	}
	return w.Flush()
}

const visibleFlagCategoryTemplate = "{{range .VisibleFlagCategories}}\n   {{if .Name}}{{.Name}}\n\n   {{end}}{{$flglen := len .Flags}}{{range $i, $e := .Flags}}{{if eq (subtract $flglen $i) 1}}{{$e}}\n{{else}}{{$e}}\n   {{end}}{{end}}{{end}}"

// templateWrap is urfave's wrap and wrapLine.
func templateWrap(input string, offset, wrapAt int) string {
	var ss []string
	padding := strings.Repeat(" ", offset)
	for i, line := range strings.Split(input, "\n") {
		if line == "" {
			ss = append(ss, line)
			continue
		}
		wrapped := line
		if wrapAt > offset && len(line) > wrapAt-offset {
			if words := strings.Fields(line); len(words) > 0 {
				wrapped = words[0]
				spaceLeft := wrapAt - offset - len(wrapped)
				for _, word := range words[1:] {
					if len(word)+1 > spaceLeft {
						wrapped += "\n" + padding + word
						spaceLeft = wrapAt - offset - len(word)
					} else {
						wrapped += " " + word
						spaceLeft -= 1 + len(word)
					}
				}
			}
		}
		if i > 0 {
			wrapped = padding + wrapped
		}
		ss = append(ss, wrapped)
	}
	return strings.Join(ss, "\n")
}

// crossCheckHelp makes every help screen urfave prints until the test
// ends go through both renderers, and fails the test where they differ.
// It returns a counter of the screens checked.
func crossCheckHelp(t *testing.T) *int {
	orig := ucli.HelpPrinter
	t.Cleanup(func() { ucli.HelpPrinter = orig })
	checked := new(int)
	ucli.HelpPrinter = func(w io.Writer, templ string, data any) {
		var got, want bytes.Buffer
		orig(&got, templ, data)
		// An error (urfave's `app help cmd` on a command with
		// subcommands hits one) leaves what was written before it
		// unflushed; both renderers must leave the same.
		templateHelp(&want, templ, data)
		if got.String() != want.String() {
			t.Errorf("help differs from urfave's templates\ngot:\n%s\nwant:\n%s", got.String(), want.String())
		}
		*checked++
		w.Write(got.Bytes())
	}
	return checked
}

// TestHelpMatchesTemplates: `wren --help`, `wren help`, and --help and
// `help` of every command and subcommand print what urfave's templates
// print.
func TestHelpMatchesTemplates(t *testing.T) {
	checked := crossCheckHelp(t)
	var paths [][]string
	var walk func(prefix []string, cmds []*ucli.Command)
	walk = func(prefix []string, cmds []*ucli.Command) {
		for _, c := range cmds {
			p := append(append([]string(nil), prefix...), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, App(Env{}).Commands)
	if len(paths) < 30 {
		t.Fatalf("found %d commands; the walk is broken", len(paths))
	}
	runs := [][]string{{"--help"}, {}}
	for _, p := range paths {
		runs = append(runs, append(append([]string(nil), p...), "--help"))
	}
	if os.Getenv(helpWordsEnv) == "1" {
		// `wren help` and `wren help CMD`, in a process of their own: the
		// help command's setup adds the (global) help command to its own
		// subcommands, and a later App in the same process would recurse
		// through that cycle forever (the fish completion does).
		runs = [][]string{{"help"}}
		for _, p := range paths {
			if len(p) == 1 {
				runs = append(runs, []string{"help", p[0]})
			}
		}
	}
	for _, args := range runs {
		before := *checked
		r := run(t, "", args...)
		if *checked == before && len(args) > 0 && args[len(args)-1] == "--help" {
			t.Errorf("wren %s printed no help (exit %d): %s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	t.Logf("%d help screens checked", *checked)
}

// helpWordsEnv makes TestHelpMatchesTemplates check the `help` command's
// screens instead of the --help ones; TestHelpWordsMatchTemplates sets it
// in a child process.
const helpWordsEnv = "WREN_TEST_HELP_WORDS"

// TestHelpWordsMatchTemplates: `wren help` and `wren help CMD` print what
// urfave's templates print (including, for a command with subcommands,
// urfave's cut-off screen: its template fails halfway). They run in a
// child process, as TestHelpMatchesTemplates explains.
func TestHelpWordsMatchTemplates(t *testing.T) {
	if os.Getenv(helpWordsEnv) == "1" {
		t.Skip("the child process runs TestHelpMatchesTemplates only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelpMatchesTemplates$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helpWordsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHelpMatchesTemplates") {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "help screens checked") {
		t.Fatalf("the child process checked no help screen:\n%s", out)
	}
}

// TestHelpMatchesTemplatesEveryField: the parts of the templates wren's
// commands leave empty (authors, copyright, categories, version,
// description, usage text, wrapped lines) render the same too.
func TestHelpMatchesTemplatesEveryField(t *testing.T) {
	checked := crossCheckHelp(t)
	for i, app := range []*ucli.App{
		{
			Name: "a", Usage: "does\nthings", UsageText: "a [x]\nmore", Version: "1.0", Description: "long\n\ndescription",
			Authors:   []*ucli.Author{{Name: "A", Email: "a@b"}, {Name: "B"}},
			Copyright: "(c) someone",
			Flags: []ucli.Flag{&ucli.StringFlag{Name: "s", Aliases: []string{"x"}, Usage: "a string", Value: "v", EnvVars: []string{"S"}},
				&ucli.BoolFlag{Name: "hidden", Hidden: true}, &ucli.IntFlag{Name: "n", Category: "numbers"}},
			Commands: []*ucli.Command{
				{Name: "one", Aliases: []string{"1"}, Usage: "first", Category: "cat", Description: "d", Args: true,
					Flags: []ucli.Flag{&ucli.StringFlag{Name: "f", Category: "fc"}, &ucli.StringFlag{Name: "g"}}},
				{Name: "two", Usage: "second\nline", ArgsUsage: "ARG", Subcommands: []*ucli.Command{
					{Name: "sub", Usage: "s", Flags: []ucli.Flag{&ucli.DurationFlag{Name: "d"}}},
					{Name: "hid", Hidden: true},
				}},
				{Name: "three-long-name", Aliases: []string{"3"}, Usage: "third", Category: "cat"},
			},
		},
		{Name: "b", Args: true, HideVersion: true, Version: "2", Authors: []*ucli.Author{{Name: "Only"}},
			Commands: []*ucli.Command{{Name: "x", Usage: "u"}, {Name: "yy", Usage: "v"}}},
		{Name: "c", ArgsUsage: "FILE"},
	} {
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		app.ExitErrHandler = func(*ucli.Context, error) {}
		for _, args := range [][]string{{"--help"}, {"one", "--help"}, {"two", "--help"}, {"two", "sub", "--help"},
			{"three-long-name", "--help"}, {"x", "--help"}} {
			app.RunContext(context.Background(), append([]string{app.Name}, args...))
		}
		if *checked == 0 {
			t.Fatalf("app %d printed no help", i)
		}
	}
	t.Logf("%d help screens checked", *checked)
}
