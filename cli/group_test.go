package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupBrokers is the bootstrap address of a wren broker for the group
// tests: WREN_TEST_BROKERS when set, else a one-node wren whose classic
// groups rebalance at once (group.initial.rebalance.delay.ms = 0) and
// whose consumer groups heartbeat every 500 ms: the defaults (3 s, 5 s)
// would only slow every join down.
func groupBrokers(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("WREN_TEST_BROKERS"); b != "" {
		return b
	}
	return wrenBroker(t, `
[groups]
group.initial.rebalance.delay.ms = 0
group.consumer.heartbeat.interval.ms = 500
group.consumer.min.heartbeat.interval.ms = 500
`)
}

// testAdmin is a kadm client for checking what the commands did by a
// second route.
func testAdmin(t *testing.T, brokers string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// commit commits offsets for group outside group management, the way
// seek --execute does, but without going through the CLI.
func commit(t *testing.T, adm *kadm.Client, group, topic string, offsets map[int32]int64) {
	t.Helper()
	os := make(kadm.Offsets)
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(testCtx(t), group, os); err != nil {
		t.Fatalf("commit %v for group %s: %v", offsets, group, err)
	}
}

// committed is the group's committed offsets of topic, by a second route.
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resps, err := adm.FetchOffsets(testCtx(t), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p, r := range resps[topic] {
		if r.Err != nil {
			t.Fatalf("fetch offset of %s %s/%d: %v", group, topic, p, r.Err)
		}
		if r.At >= 0 {
			out[p] = r.At
		}
	}
	return out
}

// syncBuffer is a buffer a running command writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// member is a `wren ...` command (consume --group, mostly) running in a
// process of its own, as a user's second terminal would: a child of the
// test binary that runs TestHelperWren. A process rather than a goroutine,
// because two urfave Apps in one process share its global help flag.
type member struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
	res            *result
}

// helperArgsEnv carries a child's arguments, as JSON.
const helperArgsEnv = "WREN_TEST_HELPER_ARGS"

// TestHelperWren is no test of its own: it is the body of startMember's
// child processes, which run one wren command until it ends or SIGINT.
func TestHelperWren(t *testing.T) {
	raw := os.Getenv(helperArgsEnv)
	if raw == "" {
		t.Skip("runs only as a child of startMember")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", helperArgsEnv, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// The parent ends the child; this is the backstop if it cannot.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	env := Env{Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(Main(ctx, env, append([]string{"wren"}, args...)))
}

func startMember(t *testing.T, args ...string) *member {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{args: args, done: make(chan struct{})}
	m.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperWren$", "-test.count=1")
	m.cmd.Env = append(os.Environ(), helperArgsEnv+"="+string(raw))
	m.cmd.Stdout, m.cmd.Stderr = &m.stdout, &m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start wren %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		m.cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop sends SIGINT, as Ctrl-C would, and waits for the process to exit.
func (m *member) stop(t *testing.T) result {
	t.Helper()
	if m.res != nil {
		return *m.res
	}
	m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.cmd.Process.Kill()
		<-m.done
		t.Fatalf("wren %s: still running 30s after SIGINT; killed\nstderr:\n%s", strings.Join(m.args, " "), m.stderr.String())
	}
	m.res = &result{code: m.cmd.ProcessState.ExitCode(), stdout: m.stdout.String(), stderr: m.stderr.String()}
	return *m.res
}

// waitFor polls cond until it holds, failing the test with what the last
// poll saw if it does not within the deadline.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after 30s; last saw:\n%s", what, last)
		}
		<-tick.C
	}
}

// describeJSON runs group describe with --format json.
func describeJSON(t *testing.T, b, group string, extra ...string) groupDescription {
	t.Helper()
	var descs []groupDescription
	args := append([]string{"group", "describe", group, "--format", "json", "-b", b}, extra...)
	decodeJSON(t, mustRun(t, "", args...).stdout, &descs)
	if len(descs) != 1 || descs[0].Group != group {
		t.Fatalf("group describe %s: %+v", group, descs)
	}
	return descs[0]
}

// waitStable waits until group is Stable with n members, each assigned at
// least one partition.
func waitStable(t *testing.T, b, group string, n int) groupDescription {
	t.Helper()
	var d groupDescription
	waitFor(t, fmt.Sprintf("group %s Stable with %d assigned members", group, n), func() (bool, string) {
		r := run(t, "", "group", "describe", group, "--members", "--format", "json", "-b", b)
		if r.code != 0 {
			return false, r.stderr
		}
		var descs []groupDescription
		decodeJSON(t, r.stdout, &descs)
		d = descs[0]
		if d.State != "Stable" || len(d.Members) != n {
			return false, r.stdout
		}
		for _, m := range d.Members {
			if m.partitionCount() == 0 {
				return false, r.stdout
			}
		}
		return true, ""
	})
	return d
}

// offsetsRows parses the offsets view's table into its cells, by column
// name, and returns the summary line.
func offsetsRows(t *testing.T, out string) ([]map[string]string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("describe output too short:\n%s", out)
	}
	header := strings.Fields(lines[0])
	want := []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}
	if !slices.Equal(header, want) {
		t.Fatalf("describe header %q, want %q", lines[0], want)
	}
	var rows []map[string]string
	for _, l := range lines[1 : len(lines)-2] {
		cells := strings.Fields(l)
		if len(cells) != len(header) {
			t.Fatalf("describe row %q has %d cells", l, len(cells))
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = cells[i]
		}
		rows = append(rows, row)
	}
	if lines[len(lines)-2] != "" {
		t.Fatalf("no blank line before the summary:\n%s", out)
	}
	return rows, lines[len(lines)-1]
}

func TestGroupDescribeLag(t *testing.T) {
	b := groupBrokers(t)
	adm := testAdmin(t, b)
	topic := uniqueTopic(t)
	group := topic + "-g"
	mustRun(t, "", "topic", "create", topic, "-p", "3", "-r", "1", "-b", b)
	mustRun(t, strings.Repeat("x\n", 10), "produce", topic, "--partition", "0", "-b", b)
	mustRun(t, strings.Repeat("y\n", 4), "produce", topic, "--partition", "1", "-b", b)
	// Committed 7 of 10 and 4 of 4; nothing for partition 2.
	commit(t, adm, group, topic, map[int32]int64{0: 7, 1: 4})

	r := mustRun(t, "", "group", "describe", group, "-b", b)
	rows, summary := offsetsRows(t, r.stdout)
	want := []map[string]string{
		{"GROUP": group, "TOPIC": topic, "PARTITION": "0", "CURRENT-OFFSET": "7", "LOG-END-OFFSET": "10", "LAG": "3", "CONSUMER-ID": "-", "HOST": "-", "CLIENT-ID": "-"},
		{"GROUP": group, "TOPIC": topic, "PARTITION": "1", "CURRENT-OFFSET": "4", "LOG-END-OFFSET": "4", "LAG": "0", "CONSUMER-ID": "-", "HOST": "-", "CLIENT-ID": "-"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("describe rows:\n%v\nwant:\n%v\noutput:\n%s", rows, want, r.stdout)
	}
	if want := fmt.Sprintf("Group %s: state Empty, 0 members, TOTAL-LAG 3", group); summary != want {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if !strings.Contains(r.stderr, "has no active members") {
		t.Errorf("stderr %q does not say the group has no members", r.stderr)
	}
	// Kafka's column layout: GROUP and TOPIC padded to at least 15,
	// PARTITION to 10.
	if !strings.HasPrefix(r.stdout, fmt.Sprintf("%-*s %-*s %-10s %-15s", max(15, len(group)), "GROUP", max(15, len(topic)), "TOPIC", "PARTITION", "CURRENT-OFFSET")) {
		t.Errorf("header layout:\n%s", r.stdout)
	}

	d := describeJSON(t, b, group)
	if d.TotalLag == nil || *d.TotalLag != 3 || len(d.Offsets) != 2 || *d.Offsets[0].Lag != 3 || d.Type != "classic" || d.State != "Empty" {
		t.Errorf("describe --format json: %+v", d)
	}

	// Consume three more from partition 0 as the group: the lag drops.
	if out := mustRun(t, "", "consume", topic, "-g", group, "-n", "3", "-b", b).stdout; out != "x\nx\nx\n" {
		t.Fatalf("consume -g printed %q", out)
	}
	if d := describeJSON(t, b, group); d.TotalLag == nil || *d.TotalLag != 0 {
		t.Errorf("TOTAL-LAG after consuming the rest: %+v", d)
	}

	r = mustFail(t, "", "group", "describe", group+"-missing", "-b", b)
	if !strings.Contains(r.stderr, "group "+group+"-missing does not exist") {
		t.Errorf("describe of a missing group: stderr %q", r.stderr)
	}
	mustFail(t, "", "group", "describe", "-b", b)
	mustFail(t, "", "group", "describe", group, "--members", "--state", "-b", b)
}

// One group with a live member: list filters by state, describe shows the
// member in every view, a partition without a committed offset shows "-",
// and delete and seek --execute refuse.
func TestGroupActiveMember(t *testing.T) {
	b := groupBrokers(t)
	adm := testAdmin(t, b)
	topic := uniqueTopic(t)
	active, idle := topic+"-active", topic+"-idle"
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)
	mustRun(t, "a\nb\nc\n", "produce", topic, "--partition", "0", "-b", b)
	mustRun(t, "d\ne\n", "produce", topic, "--partition", "1", "-b", b)
	commit(t, adm, idle, topic, map[int32]int64{0: 1})

	// The member starts at the end, so it has read and committed
	// nothing until told otherwise.
	m := startMember(t, "consume", topic, "-g", active, "--assignor", "range", "-o", "end", "-b", b)
	d := waitStable(t, b, active, 1)
	if got := d.Members[0].Assignment; len(got) != 1 || got[0].Topic != topic || !slices.Equal(got[0].Partitions, []int32{0, 1}) {
		t.Errorf("member assignment %+v, want %s [0 1]", got, topic)
	}
	memberID := d.Members[0].ConsumerID

	// list, with and without a state filter (any case).
	listed := func(args ...string) []listedGroupRow {
		var rows []listedGroupRow
		decodeJSON(t, mustRun(t, "", append([]string{"group", "list", "--format", "json", "-b", b}, args...)...).stdout, &rows)
		return rows
	}
	names := func(rows []listedGroupRow) []string {
		var out []string
		for _, r := range rows {
			if strings.HasPrefix(r.Group, topic) {
				out = append(out, r.Group+"="+r.State)
			}
		}
		return out
	}
	if got := names(listed()); !slices.Equal(got, []string{active + "=Stable", idle + "=Empty"}) {
		t.Errorf("group list: %v", got)
	}
	if got := names(listed("--state", "stable")); !slices.Equal(got, []string{active + "=Stable"}) {
		t.Errorf("group list --state stable: %v", got)
	}
	if got := names(listed("--state", "Empty")); !slices.Equal(got, []string{idle + "=Empty"}) {
		t.Errorf("group list --state Empty: %v", got)
	}
	if got := names(listed("--state", "Empty", "--state", "Stable")); len(got) != 2 {
		t.Errorf("group list --state Empty --state Stable: %v", got)
	}
	for _, r := range listed() {
		if r.Group == active && (r.Type != "classic" || r.ProtocolType != "consumer") {
			t.Errorf("listed %+v, want type classic, protocol type consumer", r)
		}
	}
	text := mustRun(t, "", "group", "list", "--state", "Stable", "-b", b).stdout
	if !regexp.MustCompile(`(?m)^GROUP +TYPE +PROTOCOL +STATE$`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(active)+` +classic +consumer +Stable$`).MatchString(text) {
		t.Errorf("group list text:\n%s", text)
	}
	mustFail(t, "", "group", "list", "--state", "Sleepy", "-b", b)

	// describe: no partition has a committed offset: "-", and no part
	// in TOTAL-LAG (Kafka's way; the log holds 5 records).
	r := mustRun(t, "", "group", "describe", active, "-b", b)
	rows, summary := offsetsRows(t, r.stdout)
	if len(rows) != 2 {
		t.Fatalf("describe rows:\n%s", r.stdout)
	}
	for _, row := range rows {
		if row["CONSUMER-ID"] != memberID || row["CLIENT-ID"] != clientID || row["HOST"] == "-" {
			t.Errorf("row %v: want member %s, client %s", row, memberID, clientID)
		}
	}
	for p, leo := range []string{"3", "2"} {
		if rows[p]["PARTITION"] != strconv.Itoa(p) || rows[p]["CURRENT-OFFSET"] != "-" || rows[p]["LOG-END-OFFSET"] != leo || rows[p]["LAG"] != "-" {
			t.Errorf("partition %d (no commit): %v, want LOG-END-OFFSET %s and dashes", p, rows[p], leo)
		}
	}
	if want := fmt.Sprintf("Group %s: state Stable, 1 members, TOTAL-LAG 0", active); summary != want {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if d := describeJSON(t, b, active); d.TotalLag == nil || *d.TotalLag != 0 || d.Offsets[0].CurrentOffset != nil || d.Offsets[0].Lag != nil {
		t.Errorf("describe --format json of partitions without commits: %+v", d)
	}

	r = mustRun(t, "", "group", "describe", active, "--members", "--verbose", "-b", b)
	memberRE := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(active) + ` +` + regexp.QuoteMeta(memberID) + ` +\S+ +` + clientID + ` +2 +` + regexp.QuoteMeta(topic) + `\(0,1\)$`)
	if !strings.HasPrefix(r.stdout, "GROUP ") || !strings.Contains(r.stdout, "#PARTITIONS") || !memberRE.MatchString(r.stdout) {
		t.Errorf("describe --members --verbose:\n%s", r.stdout)
	}
	r = mustRun(t, "", "group", "describe", active, "--state", "-b", b)
	stateRE := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(active) + ` +\S+:\d+  \(\d+\) +range +Stable +1$`)
	if !strings.Contains(r.stdout, "COORDINATOR (ID)") || !stateRE.MatchString(r.stdout) {
		t.Errorf("describe --state:\n%s", r.stdout)
	}

	// delete: refused for the active group, done for the idle one.
	r = mustFail(t, "", "group", "delete", active, idle, "-b", b)
	if want := active + ": group is not empty: stop its consumers first\n" + idle + ": deleted\n"; r.stdout != want {
		t.Errorf("group delete printed %q, want %q", r.stdout, want)
	}
	if got := names(listed()); !slices.Equal(got, []string{active + "=Stable"}) {
		t.Errorf("group list after delete: %v", got)
	}

	// seek: a dry run is fine, --execute is refused.
	r = mustRun(t, "", "group", "seek", active, "--topic", topic, "--to", "start", "-b", b)
	if !strings.Contains(r.stderr, "dry run: add --execute to commit these offsets") {
		t.Errorf("seek dry run stderr %q", r.stderr)
	}
	r = mustFail(t, "", "group", "seek", active, "--topic", topic+":0", "--to", "2", "--execute", "-b", b)
	if want := "group " + active + " is active (state Stable, 1 members): stop its consumers before seeking"; !strings.Contains(r.stderr, want) {
		t.Errorf("seek --execute on an active group: stderr %q, want %q", r.stderr, want)
	}
	if after := committed(t, adm, active, topic); len(after) != 0 {
		t.Errorf("refused seek committed: %v", after)
	}

	// A record for the member to print and commit, on exit at the
	// latest; then the group is Empty and both can be done.
	mustRun(t, "f\n", "produce", topic, "--partition", "0", "-b", b)
	waitFor(t, "the member to print f", func() (bool, string) {
		out := m.stdout.String()
		return out == "f\n", out
	})
	if res := m.stop(t); res.code != 0 || res.stdout != "f\n" {
		t.Fatalf("member exit %d, printed %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if got := committed(t, adm, active, topic); got[0] != 4 {
		t.Errorf("commits after the member exited: %v, want partition 0 at 4", got)
	}
	mustRun(t, "", "group", "seek", active, "--topic", topic, "--to", "start", "--execute", "-b", b)
	if got := committed(t, adm, active, topic); got[0] != 0 || got[1] != 0 {
		t.Errorf("commits after seek --to start: %v", got)
	}
	if out := mustRun(t, "", "group", "delete", active, "-b", b).stdout; out != active+": deleted\n" {
		t.Errorf("group delete after the member left: %q", out)
	}
	r = mustFail(t, "", "group", "delete", active, "-b", b)
	if r.stdout != active+": group does not exist\n" {
		t.Errorf("second delete printed %q", r.stdout)
	}
}

func TestGroupSeek(t *testing.T) {
	b := groupBrokers(t)
	adm := testAdmin(t, b)
	topic := uniqueTopic(t)
	group := topic + "-g"
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)
	mustRun(t, "r0\nr1\nr2\nr3\nr4\n", "produce", topic, "--partition", "0", "-b", b)
	mustRun(t, "s0\ns1\ns2\n", "produce", topic, "--partition", "1", "-b", b)
	// Partition 0 starts at 1, so that start and 0 differ.
	del, err := adm.DeleteRecords(testCtx(t), kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 1}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("delete records: %v %v", err, del.Error())
	}
	commit(t, adm, group, topic, map[int32]int64{0: 3})

	seek := func(args ...string) result {
		return mustRun(t, "", append([]string{"group", "seek", group, "-b", b}, args...)...)
	}
	check := func(what string, want map[int32]int64) {
		t.Helper()
		if got := committed(t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("after %s: committed %v, want %v", what, got, want)
		}
	}

	// Dry run: the plan, and nothing committed.
	r := seek("--topic", topic, "--to", "start")
	want := fmt.Sprintf("%-15s %-*s %-10s %-15s %s\n", "GROUP", max(15, len(topic)), "TOPIC", "PARTITION", "NEW-OFFSET", "CURRENT-OFFSET")
	lines := strings.Split(r.stdout, "\n")
	if len(lines) != 4 || lines[0]+"\n" != strings.Replace(want, fmt.Sprintf("%-15s", "GROUP"), fmt.Sprintf("%-*s", max(15, len(group)), "GROUP"), 1) {
		t.Errorf("seek dry run printed:\n%s", r.stdout)
	}
	if f := strings.Fields(lines[1]); !slices.Equal(f, []string{group, topic, "0", "1", "3"}) {
		t.Errorf("plan row 0: %q", lines[1])
	}
	if f := strings.Fields(lines[2]); !slices.Equal(f, []string{group, topic, "1", "0", "-"}) {
		t.Errorf("plan row 1: %q", lines[2])
	}
	if !strings.Contains(r.stderr, "dry run: add --execute to commit these offsets") {
		t.Errorf("dry run stderr %q", r.stderr)
	}
	check("a dry run", map[int32]int64{0: 3})

	seek("--topic", topic, "--to", "start", "--execute")
	check("--to start", map[int32]int64{0: 1, 1: 0})
	seek("--topic", topic+":0", "--to", "end", "--execute")
	check("--to end on partition 0", map[int32]int64{0: 5, 1: 0})
	seek("--topic", topic, "--to", "2", "--execute")
	check("--to 2", map[int32]int64{0: 2, 1: 2})
	seek("--topic", topic+":0,1", "--to", "100", "--execute")
	check("--to 100 (clamped to the end)", map[int32]int64{0: 5, 1: 3})
	seek("--topic", topic+":0", "--to", "0", "--execute")
	check("--to 0 (clamped to the start)", map[int32]int64{0: 1, 1: 3})
	seek("--all-topics", "--shift-by", "2", "--execute")
	check("--shift-by 2", map[int32]int64{0: 3, 1: 3})
	seek("--all-topics", "--shift-by", "-1", "--execute")
	check("--shift-by -1", map[int32]int64{0: 2, 1: 2})
	seek("--topic", topic, "--shift-by", "-10", "--execute")
	check("--shift-by -10", map[int32]int64{0: 1, 1: 0})

	var plan seekResult
	decodeJSON(t, seek("--topic", topic+":1", "--to", "end", "--format", "json").stdout, &plan)
	if plan.Executed || len(plan.Offsets) != 1 || plan.Offsets[0].NewOffset != 3 || *plan.Offsets[0].CurrentOffset != 0 {
		t.Errorf("seek --format json: %+v", plan)
	}

	// --to-datetime: the first offset whose timestamp is at or after.
	stamps := map[int32][]int64{} // partition -> timestamp by offset
	out := mustRun(t, "", "consume", topic, "-n", "7", "-f", `%p %o %T\n`, "-b", b).stdout
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var p int32
		var o, ts int64
		if _, err := fmt.Sscan(l, &p, &o, &ts); err != nil {
			t.Fatalf("consume line %q: %v", l, err)
		}
		stamps[p] = append(stamps[p], ts)
	}
	firstAtOrAfter := func(p int32, ts int64) int64 {
		base := map[int32]int64{0: 1, 1: 0}[p]
		for i, s := range stamps[p] {
			if s >= ts {
				return base + int64(i)
			}
		}
		return base + int64(len(stamps[p]))
	}
	mid := stamps[0][2] // the timestamp of offset 3
	when := time.UnixMilli(mid).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	seek("--topic", topic, "--to-datetime", when, "--execute")
	check("--to-datetime "+when, map[int32]int64{0: firstAtOrAfter(0, mid), 1: firstAtOrAfter(1, mid)})
	seek("--topic", topic, "--to-datetime", "2999-01-01T00:00:00+02:00", "--execute")
	check("--to-datetime in the future", map[int32]int64{0: 5, 1: 3})
	seek("--topic", topic, "--to-datetime", "2001-01-01T00:00:00", "--execute")
	check("--to-datetime in the past", map[int32]int64{0: 1, 1: 0})

	// --shift-by needs a committed offset.
	r = mustFail(t, "", "group", "seek", group+"-new", "--topic", topic, "--shift-by", "1", "-b", b)
	if want := fmt.Sprintf("has no committed offset for %s/0, %s/1", topic, topic); !strings.Contains(r.stderr, want) {
		t.Errorf("--shift-by without commits: stderr %q, want %q", r.stderr, want)
	}
	r = mustFail(t, "", "group", "seek", group+"-new", "--all-topics", "--to", "end", "-b", b)
	if !strings.Contains(r.stderr, "has no committed offsets") {
		t.Errorf("--all-topics without commits: stderr %q", r.stderr)
	}
	// A group that does not exist yet can be prepared.
	mustRun(t, "", "group", "seek", group+"-new", "--topic", topic, "--to", "end", "--execute", "-b", b)
	if got := committed(t, adm, group+"-new", topic); got[0] != 5 || got[1] != 3 {
		t.Errorf("seek of a new group: committed %v", got)
	}

	for _, args := range [][]string{
		{"--topic", topic}, // no target
		{"--topic", topic, "--to", "end", "--shift-by", "1"}, // two targets
		{"--to", "end"}, // no partitions
		{"--all-topics", "--topic", topic, "--to", "end"}, // both
		{"--topic", topic, "--to", "-1"},
		{"--topic", topic, "--to", "soon"},
		{"--topic", topic, "--to-datetime", "yesterday"},
		{"--topic", topic, "--shift-by", "1.5"},
		{"--topic", topic + ":x", "--to", "end"},
		{"--topic", topic + "-missing", "--to", "end"},
		{"--topic", topic + ":7", "--to", "end"},
	} {
		mustFail(t, "", append([]string{"group", "seek", group, "-b", b}, args...)...)
	}
	check("the failed seeks", map[int32]int64{0: 1, 1: 0})
}

// Two members, in two processes, share the partitions and
// together print every record once; they commit on exit, so the group
// then has no lag.
func TestConsumeGroupSharing(t *testing.T) {
	assignors := []string{"range", "cooperative-sticky"}
	if !testing.Short() {
		assignors = append(assignors, "roundrobin", "sticky")
	}
	b := groupBrokers(t)
	for _, assignor := range assignors {
		t.Run(assignor, func(t *testing.T) {
			topic := uniqueTopic(t)
			group := topic + "-g"
			const partitions, perPartition = 4, 10
			mustRun(t, "", "topic", "create", topic, "-p", strconv.Itoa(partitions), "-r", "1", "-b", b)
			args := []string{"consume", topic, "-g", group, "--assignor", assignor, "-f", `%p:%v\n`, "-b", b}
			m1, m2 := startMember(t, args...), startMember(t, args...)
			d := waitStable(t, b, group, 2)
			if d.AssignmentStrategy != assignor {
				t.Errorf("assignment strategy %q, want %q", d.AssignmentStrategy, assignor)
			}
			var want []string
			for p := range partitions {
				var in strings.Builder
				for i := range perPartition {
					v := fmt.Sprintf("v%d-%d", p, i)
					in.WriteString(v + "\n")
					want = append(want, fmt.Sprintf("%d:%s", p, v))
				}
				mustRun(t, in.String(), "produce", topic, "--partition", strconv.Itoa(p), "-b", b)
			}
			waitFor(t, "both members to print every record", func() (bool, string) {
				got := strings.Count(m1.stdout.String(), "\n") + strings.Count(m2.stdout.String(), "\n")
				return got >= len(want), fmt.Sprintf("%d of %d lines\nmember 1:\n%s\nmember 2:\n%s", got, len(want), m1.stdout.String(), m2.stdout.String())
			})
			r1, r2 := m1.stop(t), m2.stop(t)
			if r1.code != 0 || r2.code != 0 {
				t.Fatalf("members exited %d (%s) and %d (%s)", r1.code, r1.stderr, r2.code, r2.stderr)
			}
			l1, l2 := strings.Fields(r1.stdout), strings.Fields(r2.stdout)
			if len(l1) == 0 || len(l2) == 0 {
				t.Errorf("the partitions were not shared: %d and %d records", len(l1), len(l2))
			}
			got := append(slices.Clone(l1), l2...)
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("the members printed %v, want each of %v once", got, want)
			}
			// No partition printed by both.
			owner := map[string]int{}
			for i, lines := range [][]string{l1, l2} {
				for _, l := range lines {
					p, _, _ := strings.Cut(l, ":")
					if o, ok := owner[p]; ok && o != i {
						t.Errorf("partition %s printed by both members", p)
					}
					owner[p] = i
				}
			}
			after := describeJSON(t, b, group)
			if after.TotalLag == nil || *after.TotalLag != 0 || len(after.Offsets) != partitions {
				t.Errorf("after both members exited: %+v", after)
			}
			for _, o := range after.Offsets {
				if o.CurrentOffset == nil || *o.CurrentOffset != perPartition {
					t.Errorf("partition %d committed %v, want %d", o.Partition, o.CurrentOffset, perPartition)
				}
			}
		})
	}
}

// A group member resumes from the group's commits, and --idle-timeout
// ends a consume that has nothing more to read.
func TestConsumeGroupResumesIdle(t *testing.T) {
	b := groupBrokers(t)
	topic := uniqueTopic(t)
	group := topic + "-g"
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)
	mustRun(t, "a\nb\nc\n", "produce", topic, "--partition", "0", "-b", b)
	mustRun(t, "d\n", "produce", topic, "--partition", "1", "-b", b)
	if out := mustRun(t, "", "consume", topic, "-g", group, "--max-records", "4", "-b", b).stdout; len(strings.Fields(out)) != 4 {
		t.Fatalf("first group consume printed %q", out)
	}
	mustRun(t, "e\n", "produce", topic, "--partition", "0", "-b", b)
	start := time.Now()
	r := mustRun(t, "", "consume", topic, "-g", group, "--idle-timeout", "3s", "-b", b)
	if r.stdout != "e\n" {
		t.Errorf("resumed group consume printed %q, want %q", r.stdout, "e\n")
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("--idle-timeout 3s took %v", el)
	}
	if d := describeJSON(t, b, group); d.TotalLag == nil || *d.TotalLag != 0 {
		t.Errorf("after the idle exit: %+v", d)
	}
	// Without a group too: ends with what there is.
	if out := mustRun(t, "", "consume", topic, "--idle-timeout", "1s", "-b", b).stdout; len(strings.Fields(out)) != 5 {
		t.Errorf("consume --idle-timeout printed %q", out)
	}

	for _, args := range [][]string{
		{"--protocol", "consumer"},          // needs --group
		{"--assignor", "range"},             // needs --group
		{"-g", group, "--protocol", "v2"},   // unknown protocol
		{"-g", group, "--assignor", "best"}, // unknown assignor
		{"-g", group, "--protocol", "consumer", "--assignor", "roundrobin"},
		{"--idle-timeout", "-1s"},
	} {
		mustFail(t, "", append([]string{"consume", topic, "-b", b}, args...)...)
	}
}

// --protocol consumer (KIP-848) asks the broker to assign, against kfake
// and against wren when it advertises ConsumerGroupHeartbeat (skipped
// until then).
func TestConsumeGroupConsumerProtocol(t *testing.T) {
	t.Run("kfake", func(t *testing.T) {
		if !usingKfake() {
			t.Skip("WREN_TEST_BROKERS is set: the wren subtest uses it")
		}
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatalf("kfake: %v", err)
		}
		t.Cleanup(c.Close)
		testConsumerProtocol(t, strings.Join(c.ListenAddrs(), ","))
	})
	t.Run("wren", func(t *testing.T) {
		b := groupBrokers(t)
		if !servesKey(t, b, kmsg.ConsumerGroupHeartbeat) {
			t.Skip("the broker does not serve ConsumerGroupHeartbeat yet")
		}
		testConsumerProtocol(t, b)
	})
}

// servesKey reports whether every broker advertises the API key.
func servesKey(t *testing.T, b string, key kmsg.Key) bool {
	t.Helper()
	versions, err := testAdmin(t, b).ApiVersions(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if _, ok := v.KeyMaxVersion(int16(key)); !ok {
			return false
		}
	}
	return len(versions) > 0
}

func testConsumerProtocol(t *testing.T, b string) {
	topic := uniqueTopic(t)
	group := topic + "-g"
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)
	mustRun(t, "a\nb\n", "produce", topic, "--partition", "0", "-b", b)
	mustRun(t, "c\n", "produce", topic, "--partition", "1", "-b", b)

	m := startMember(t, "consume", topic, "-g", group, "--protocol", "consumer", "--assignor", "range", "-b", b)
	d := waitStable(t, b, group, 1)
	if d.Type != "consumer" || d.AssignmentStrategy != "range" || d.Members[0].partitionCount() != 2 {
		t.Errorf("consumer group described as %+v", d)
	}
	var rows []listedGroupRow
	decodeJSON(t, mustRun(t, "", "group", "list", "--type", "consumer", "--format", "json", "-b", b).stdout, &rows)
	if len(rows) != 1 || rows[0].Group != group || rows[0].Type != "consumer" {
		t.Errorf("group list --type consumer: %+v", rows)
	}
	waitFor(t, "the member to print 3 records", func() (bool, string) {
		out := m.stdout.String()
		return strings.Count(out, "\n") >= 3, out
	})
	if r := m.stop(t); r.code != 0 {
		t.Fatalf("member exit %d: %s", r.code, r.stderr)
	}
	after := describeJSON(t, b, group)
	if after.Type != "consumer" || after.TotalLag == nil || *after.TotalLag != 0 || len(after.Offsets) != 2 {
		t.Errorf("after the member left: %+v", after)
	}
	// A consumer group can be seeked and deleted once it is empty.
	mustRun(t, "", "group", "seek", group, "--all-topics", "--to", "start", "--execute", "-b", b)
	if d := describeJSON(t, b, group); d.TotalLag == nil || *d.TotalLag != 3 {
		t.Errorf("after seek --to start: %+v", d)
	}
	mustRun(t, "", "group", "delete", group, "-b", b)
	mustFail(t, "", "group", "describe", group, "-b", b)
}

// Against a broker without KIP-848, --protocol consumer is an error, not
// franz-go's silent fall back to the classic protocol.
func TestConsumeGroupConsumerProtocolUnsupported(t *testing.T) {
	b := groupBrokers(t)
	if servesKey(t, b, kmsg.ConsumerGroupHeartbeat) {
		t.Skip("the broker serves ConsumerGroupHeartbeat: TestConsumeGroupConsumerProtocol/wren covers it")
	}
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	r := mustFail(t, "", "consume", topic, "-g", topic+"-g", "--protocol", "consumer", "-b", b)
	if !strings.Contains(r.stderr, "does not serve ConsumerGroupHeartbeat") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestParseSeekDatetime(t *testing.T) {
	loc := time.FixedZone("test", 3600)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)},
		{"2026-01-02T15:04:05.250Z", time.Date(2026, 1, 2, 15, 4, 5, 250e6, time.UTC)},
		{"2026-01-02T15:04:05+02:00", time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC)},
		{"2026-01-02T15:04:05-05:30", time.Date(2026, 1, 2, 20, 34, 5, 0, time.UTC)},
		{"2026-01-02T15:04:05", time.Date(2026, 1, 2, 14, 4, 5, 0, time.UTC)}, // in loc (+01:00)
		{"2026-01-02T15:04:05.5", time.Date(2026, 1, 2, 14, 4, 5, 500e6, time.UTC)},
	} {
		got, err := parseSeekDatetime(tc.in, loc)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseSeekDatetime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "2026-01-02", "2026-01-02 15:04:05", "2026-13-02T15:04:05Z", "1700000000000", "2026-01-02T15:04:05+0200"} {
		if _, err := parseSeekDatetime(bad, loc); err == nil {
			t.Errorf("parseSeekDatetime(%q) accepted", bad)
		}
	}
}

func TestParseTopicPartitions(t *testing.T) {
	for _, tc := range []struct {
		in    string
		topic string
		ps    []int32
	}{
		{"t", "t", nil},
		{"t:0", "t", []int32{0}},
		{"t:2,0,2", "t", []int32{2, 0}},
		{"a.b-c_d:1, 3", "a.b-c_d", []int32{1, 3}},
	} {
		topic, ps, err := parseTopicPartitions(tc.in)
		if err != nil || topic != tc.topic || !slices.Equal(ps, tc.ps) {
			t.Errorf("parseTopicPartitions(%q) = %q %v %v", tc.in, topic, ps, err)
		}
	}
	for _, bad := range []string{"", ":0", "t:", "t:-1", "t:x", "t:1,,2", "t:2147483648"} {
		if _, _, err := parseTopicPartitions(bad); err == nil {
			t.Errorf("parseTopicPartitions(%q) accepted", bad)
		}
	}
}

func TestClampOffset(t *testing.T) {
	for _, tc := range []struct{ n, start, end, want int64 }{
		{5, 0, 10, 5}, {-3, 2, 10, 2}, {11, 0, 10, 10}, {addClamped(1<<62, 1<<62), 0, 10, 10},
		{addClamped(-(1 << 62), -(1 << 62)), 3, 10, 3}, {addClamped(7, -2), 0, 10, 5},
	} {
		if got := clampOffset(tc.n, tc.start, tc.end); got != tc.want {
			t.Errorf("clampOffset(%d, %d, %d) = %d, want %d", tc.n, tc.start, tc.end, got, tc.want)
		}
	}
	if addClamped(1<<62, 1<<62) <= 0 || addClamped(-(1<<62), -(1<<62)-1) >= 0 {
		t.Errorf("addClamped wrapped around")
	}
}

func TestKafkaTable(t *testing.T) {
	var b strings.Builder
	tab := newKafkaTable([]string{"GROUP", "PARTITION", "LAST"}, []int{6, 0, 0})
	tab.add("a-long-group", "1", "x")
	tab.add("g", "12345678901", "")
	tab.write(&b)
	want := "GROUP        PARTITION   LAST\n" +
		"a-long-group 1           x\n" +
		"g            12345678901 \n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestInterspersedGroupSeek(t *testing.T) {
	app := App(Env{})
	in := "wren group seek G --shift-by -2 --topic t:0,1 --execute"
	want := "wren group seek --shift-by -2 --topic t:0,1 --execute G"
	if got := strings.Join(Interspersed(app, strings.Fields(in)), " "); got != want {
		t.Errorf("Interspersed(%q) = %q, want %q", in, got, want)
	}
}
