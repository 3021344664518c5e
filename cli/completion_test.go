package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildWren builds the wren binary into a temporary directory and returns
// the directory; the binary is dir/wren.
func buildWren(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "wren"), "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// topicNames lists the broker's topics with the CLI.
func topicNames(t *testing.T, brokers string) []string {
	t.Helper()
	var names []string
	for _, l := range lines(mustRun(t, "", "topic", "list", "-b", brokers).stdout) {
		names = append(names, strings.Fields(l)[0])
	}
	slices.Sort(names)
	return names
}

// TestCompletionNeverRuns drives the generated bash script in a real bash
// against the built binary, as a user's <TAB> would: the completion
// function with COMP_WORDS and COMP_CWORD set. The words typed so far
// would delete or create topics if anything ran them; the broker must be
// left as it was, and the completions must be the flags of the command
// typed. zsh's script passes the binary the same argv shape (its words up
// to the cursor, then the marker): that argv is run directly. fish's
// script is static and runs nothing.
func TestCompletionNeverRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := buildWren(t)
	brokers := testBrokers(t)
	mustRun(t, "", "topic", "create", "important", "-p", "1", "-r", "1", "-b", brokers)
	before := topicNames(t, brokers)

	// The script as `./wren completion bash` prints it, in the binary's
	// directory, so both wren (on PATH) and ./wren resolve.
	script := exec.Command("./wren", "completion", "bash")
	script.Dir = dir
	text, err := script.Output()
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, "wren.bash")
	if err := os.WriteFile(scriptPath, text, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "WREN_BROKERS="+brokers)
	bash := func(words ...string) []string {
		t.Helper()
		args := append([]string{"--norc", "--noprofile", "-c",
			`source "$0" && COMP_WORDS=("$@") && COMP_CWORD=$(($#-1)) && _wren_complete && printf '%s\n' "${COMPREPLY[@]}"`,
			scriptPath}, words...)
		cmd := exec.Command("bash", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
		}
		return lines(string(out))
	}
	want := func(words []string, got []string, in, out []string) {
		t.Helper()
		for _, w := range in {
			if !slices.Contains(got, w) {
				t.Errorf("completing %q: %q lacks %s", words, got, w)
			}
		}
		for _, w := range out {
			if slices.Contains(got, w) {
				t.Errorf("completing %q: %q offers %s", words, got, w)
			}
		}
	}
	for _, tc := range []struct {
		words   []string
		in, out []string
		flags   bool
	}{
		{[]string{"wren", "topic", "delete", "important", "--"}, []string{"--bootstrap-server", "--timeout", "--format", "--help"}, []string{"--partitions", "-b"}, true},
		{[]string{"./wren", "topic", "delete", "important", "--"}, []string{"--bootstrap-server"}, nil, true},
		{[]string{"wren", "topic", "create", "-"}, []string{"--partitions", "-p", "--if-not-exists", "-b"}, []string{"--execute"}, true},
		{[]string{"wren", "topic", "create", "x", "--if"}, []string{"--if-not-exists"}, []string{"--partitions"}, true},
		{[]string{"wren", "-b", "127.0.0.1:1", "topic", "create", "y", "--"}, []string{"--partitions"}, nil, true},
		{[]string{"wren", "topic", ""}, []string{"create", "delete", "list"}, []string{"topic"}, false},
		{[]string{"wren", "to"}, []string{"topic"}, []string{"produce"}, false},
	} {
		got := bash(tc.words...)
		want(tc.words, got, tc.in, tc.out)
		if tc.flags {
			for _, g := range got {
				if !strings.HasPrefix(g, strings.TrimRight(tc.words[len(tc.words)-1], "-")+"-") && !strings.HasPrefix(g, tc.words[len(tc.words)-1]) {
					t.Errorf("completing %q: %q does not start with the word typed", tc.words, g)
				}
			}
		}
	}
	// The script registers wren and the name it was printed under.
	reg := exec.Command("bash", "--norc", "--noprofile", "-c", `source "$0" && complete -p wren && complete -p ./wren`, scriptPath)
	if out, err := reg.CombinedOutput(); err != nil || strings.Count(string(out), "-F _wren_complete") != 2 {
		t.Errorf("registration: %v\n%s", err, out)
	}

	// zsh: the script passes the binary its words up to the cursor, then
	// the marker; run that argv, and an older script's (urfave's shape,
	// the marker right after the command), and nothing may happen.
	zsh := mustRun(t, "", "completion", "zsh").stdout
	if !strings.Contains(zsh, `${words[1]} "${(@)words[2,CURRENT]}" --generate-bash-completion`) {
		t.Fatalf("the zsh script no longer passes the argv this test runs:\n%s", zsh)
	}
	for _, argv := range [][]string{
		{"topic", "delete", "important", "--"},
		{"topic", "create", "-"},
		{"topic", "create", ""},
		{"topic", "delete", "important"},
		{"topic", "create"},
	} {
		cmd := exec.Command("./wren", append(argv, completionMarker)...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("wren %q %s: %v\n%s", argv, completionMarker, err, out)
		}
		if strings.HasSuffix(argv[len(argv)-1], "-") && !slices.Contains(lines(string(out)), "--bootstrap-server") {
			t.Errorf("wren %q %s: %q lacks the command's flags", argv, completionMarker, out)
		}
	}

	// fish: every line is a comment or a `complete` definition; nothing
	// calls the binary. topic delete's flags need topic and delete typed.
	fishCmd := exec.Command("./wren", "completion", "fish")
	fishCmd.Dir = dir
	fish, err := fishCmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines(string(fish)) {
		if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "complete -c ") {
			t.Errorf("fish: a line that is not a completion definition: %s", l)
		}
		if strings.Contains(l, "(") && !strings.HasPrefix(l, "#") && !strings.Contains(l, "-d '") {
			t.Errorf("fish: a command substitution: %s", l)
		}
	}
	if !strings.Contains(string(fish), "complete -c './wren' -w wren") {
		t.Errorf("fish: ./wren does not wrap wren's completions")
	}
	if !strings.Contains(string(fish), "-n '__fish_seen_subcommand_from topic; and __fish_seen_subcommand_from delete' -l timeout") {
		t.Errorf("fish: no --timeout for topic delete")
	}

	if after := topicNames(t, brokers); !slices.Equal(before, after) {
		t.Fatalf("completion changed the topics: %v, then %v", before, after)
	}
}
