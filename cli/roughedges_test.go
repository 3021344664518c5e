package cli

import (
	"net"
	"strings"
	"testing"
)

// Tests for the command line as a new user meets it: each error said once
// and plainly, typos answered with a suggestion, usage errors short and on
// stderr with exit status 2.

// An error from the broker is printed once, without package prefixes.
func TestErrorSaidOnce(t *testing.T) {
	b := wrenBroker(t, "")
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	r := mustFail(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	if n := strings.Count(r.stderr, "TOPIC_ALREADY_EXISTS"); n != 1 || strings.Contains(r.stderr, "cli:") {
		t.Errorf("stderr %q: want TOPIC_ALREADY_EXISTS once and no \"cli:\"", r.stderr)
	}
	if !strings.Contains(r.stderr, topic) || r.code != 1 {
		t.Errorf("exit %d, stderr %q: want exit 1 and the topic's name", r.code, r.stderr)
	}
}

func TestUnknownCommandSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topik"}, `unknown command "topik" for "wren" (did you mean "topic"?)`},
		{[]string{"topic", "lsit"}, `unknown command "lsit" for "wren topic" (did you mean "list"?)`},
		{[]string{"grop", "list"}, `(did you mean "group"?)`},
		{[]string{"xyzzy"}, `unknown command "xyzzy" for "wren"` + "\n"},
	} {
		r := run(t, "", tc.args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("wren %s: exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr",
				strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

// A bad flag: the error, one usage line and a pointer to --help on
// stderr, nothing on stdout, exit 2.
func TestBadFlagShortUsage(t *testing.T) {
	r := run(t, "", "topic", "list", "--nosuch")
	want := "wren: flag provided but not defined: -nosuch\nusage: wren topic list [options]\nRun 'wren topic list --help' for more.\n"
	if r.code != 2 || r.stdout != "" || r.stderr != want {
		t.Errorf("exit %d\nstdout %q\nstderr %q\nwant exit 2 and stderr %q", r.code, r.stdout, r.stderr, want)
	}
	// An argument error from the command itself is a usage error too.
	if r := run(t, "", "topic", "create"); r.code != 2 || r.stdout != "" {
		t.Errorf("topic create without a topic: exit %d, stdout %q", r.code, r.stdout)
	}
}

// Global flags work before the command name as well as after it.
func TestGlobalFlagsBeforeCommand(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "-b", b, "topic", "create", topic, "-p", "1", "-r", "1")
	if out := mustRun(t, "", "-b", b, "topic", "list").stdout; !containsLine(out, topic) {
		t.Errorf("wren -b B topic list: %q lacks %s", out, topic)
	}
	var listed []listedTopic
	decodeJSON(t, mustRun(t, "", "--format", "json", "--bootstrap-server="+b, "topic", "list").stdout, &listed)
	if len(listed) == 0 {
		t.Error("wren --format json --bootstrap-server=B topic list: empty")
	}
	// A flag no command has is still refused, as a usage error.
	if r := run(t, "", "--nosuch", "topic", "list", "-b", b); r.code != 2 {
		t.Errorf("wren --nosuch topic list: exit %d", r.code)
	}
}

// A broker that accepts connections but never answers: the error names the
// address and the command, not a bare "context deadline exceeded".
func TestSilentBrokerNamed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	addr := ln.Addr().String()
	r := mustFail(t, "", "topic", "list", "-b", addr, "--timeout", "300ms")
	if !strings.HasPrefix(r.stderr, "wren: topic list: ") {
		t.Errorf("stderr %q does not name the command once", r.stderr)
	}
	for _, want := range []string{"topic list", "no answer from the broker at " + addr, "300ms"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
}

// produce --format json writes its summary to stdout, for scripts.
func TestProduceJSONToStdout(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	r := mustRun(t, "a\nb\n", "produce", topic, "--format", "json", "-b", b)
	var sum produceSummary
	decodeJSON(t, r.stdout, &sum)
	if sum.Records != 2 || strings.Contains(r.stderr, "{") {
		t.Errorf("produce --format json: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// dump-log takes --format like every command; its text is kafka-dump-log's,
// and JSON is refused with the reason, as a usage error.
func TestDumpLogFormat(t *testing.T) {
	r := run(t, "", "dump-log", "--format", "json", "00000000000000000000.log")
	if r.code != 2 || !strings.Contains(r.stderr, "dump-log --format json is not available yet") {
		t.Errorf("dump-log --format json: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := run(t, "", "dump-log", "--format", "text", "x.unknown"); r.code != 0 {
		t.Errorf("dump-log --format text: exit %d, stderr %q", r.code, r.stderr)
	}
}

// consume -p on a partition the topic does not have fails at once.
func TestConsumeMissingPartition(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "5", "-r", "1", "-b", b)
	r := mustFail(t, "", "consume", topic, "-p", "7", "-n", "1", "-b", b)
	if !strings.Contains(r.stderr, "topic "+topic+" has 5 partitions") {
		t.Errorf("consume -p 7: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The README's tour line: a group member with an idle timeout shorter
// than the group's initial rebalance delay (3 s by default) still prints
// the records, because its idle time counts from its first assignment.
func TestConsumeGroupIdleAfterAssignment(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the group's initial rebalance delay")
	}
	b := wrenBroker(t, "")
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "3", "-r", "1", "-b", b)
	mustRun(t, "k1:hello\nk2:world\n", "produce", topic, "-K", ":", "-b", b)
	out := mustRun(t, "", "consume", topic, "-g", "billing", "--idle-timeout", "1s", "-b", b).stdout
	for _, want := range []string{"hello", "world"} {
		if !containsLine(out, want) {
			t.Errorf("consume -g billing --idle-timeout 1s printed %q, want %s", out, want)
		}
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o bashdefault -o default -F _wren_complete wren",
		"zsh":  "#compdef wren",
		"fish": "complete -c wren -n 'not __fish_seen_subcommand_from",
	} {
		if out := mustRun(t, "", "completion", shell).stdout; !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q:\n%s", shell, want, out)
		}
	}
	fish := mustRun(t, "", "completion", "fish").stdout
	if !strings.Contains(fish, "-a add-partitions") || !strings.Contains(fish, "-l bootstrap-server") {
		t.Errorf("fish completion lacks topic add-partitions or --bootstrap-server:\n%s", fish)
	}
	// What the bash and zsh scripts ask: the words after "wren topic",
	// and a command's flags (completion_test.go drives the scripts).
	if out := mustRun(t, "", "topic", "", "--generate-bash-completion").stdout; !containsLine(out, "create") || !containsLine(out, "list") {
		t.Errorf("wren topic '' --generate-bash-completion: %q", out)
	}
	if out := mustRun(t, "", "topic", "list", "--b", "--generate-bash-completion").stdout; !containsLine(out, "--bootstrap-server") {
		t.Errorf("wren topic list --b --generate-bash-completion: %q", out)
	}
	if r := run(t, "", "completion", "tcsh"); r.code != 2 || !strings.Contains(r.stderr, "bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, stderr %q", r.code, r.stderr)
	}
}
