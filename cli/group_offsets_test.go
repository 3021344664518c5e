package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// deleteOffsetsRows parses delete-offsets' table into "topic/partition
// status" lines.
func deleteOffsetsRows(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2 || !slices.Equal(strings.Fields(lines[0]), []string{"TOPIC", "PARTITION", "STATUS"}) {
		t.Fatalf("delete-offsets output:\n%s", out)
	}
	var rows []string
	width := 30
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("delete-offsets row %q", l)
		}
		width = max(width, len(f[0]))
		rows = append(rows, f[0]+"/"+f[1]+" "+strings.Join(f[2:], " "))
	}
	// Kafka's layout: TOPIC padded to at least 30, PARTITION to 15.
	if !strings.HasPrefix(lines[0], fmt.Sprintf("%-*s %-15s STATUS", width, "TOPIC", "PARTITION")) {
		t.Errorf("delete-offsets header layout %q", lines[0])
	}
	return rows
}

func TestGroupDeleteOffsetsEmptyGroup(t *testing.T) {
	b := groupBrokers(t)
	adm := testAdmin(t, b)
	topic := uniqueTopic(t)
	other, gone := topic+"-other", topic+"-gone"
	group := topic + "-g"
	for _, tp := range []string{topic, other, gone} {
		mustRun(t, "", "topic", "create", tp, "-p", "2", "-r", "1", "-b", b)
		mustRun(t, "a\nb\n", "produce", tp, "--partition", "0", "-b", b)
		mustRun(t, "c\n", "produce", tp, "--partition", "1", "-b", b)
		commit(t, adm, group, tp, map[int32]int64{0: 2, 1: 1})
	}

	// A topic without partitions: all of them.
	r := mustRun(t, "", "group", "delete-offsets", group, "--topic", topic, "-b", b)
	if got, want := deleteOffsetsRows(t, r.stdout), []string{topic + "/0 deleted", topic + "/1 deleted"}; !slices.Equal(got, want) {
		t.Errorf("delete-offsets --topic %s printed %q, want %q", topic, got, want)
	}
	if got := committed(t, adm, group, topic); len(got) != 0 {
		t.Errorf("offsets of %s after delete-offsets: %v", topic, got)
	}
	if got := committed(t, adm, group, other); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 2, 1: 1}) {
		t.Errorf("offsets of %s, not named, changed: %v", other, got)
	}
	for _, o := range describeJSON(t, b, group).Offsets {
		if o.Topic == topic {
			t.Errorf("describe still shows %s/%d (CURRENT-OFFSET %v)", o.Topic, o.Partition, dashOrInt(o.CurrentOffset))
		}
	}
	rows, _ := offsetsRows(t, mustRun(t, "", "group", "describe", group, "-b", b).stdout)
	for _, row := range rows {
		if row["TOPIC"] == topic {
			t.Errorf("describe row %v for a topic whose offsets were deleted", row)
		}
	}

	// One partition, as JSON.
	var deleted []deletedOffset
	decodeJSON(t, mustRun(t, "", "group", "delete-offsets", group, "--topic", other+":1", "--format", "json", "-b", b).stdout, &deleted)
	if len(deleted) != 1 || deleted[0] != (deletedOffset{Topic: other, Partition: 1}) {
		t.Errorf("delete-offsets --topic %s:1 --format json: %+v", other, deleted)
	}
	if got := committed(t, adm, group, other); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 2}) {
		t.Errorf("offsets of %s after deleting partition 1: %v", other, got)
	}

	// A deleted topic's offsets linger; its partitions come from them.
	mustRun(t, "", "topic", "delete", gone, "-b", b)
	waitFor(t, "topic "+gone+" gone from the metadata", func() (bool, string) {
		r := run(t, "", "topic", "describe", gone, "-b", b)
		return r.code != 0, r.stdout
	})
	r = mustRun(t, "", "group", "delete-offsets", group, "--topic", gone, "--topic", other, "-b", b)
	if got, want := deleteOffsetsRows(t, r.stdout), []string{gone + "/0 deleted", gone + "/1 deleted", other + "/0 deleted", other + "/1 deleted"}; !slices.Equal(got, want) {
		t.Errorf("delete-offsets of a deleted topic printed %q, want %q", got, want)
	}

	// Its last offsets gone, the Empty group is gone too: every partition
	// gets the group's answer, and the exit status says so.
	r = mustFail(t, "", "group", "delete-offsets", group, "--topic", topic, "-b", b)
	if got, want := deleteOffsetsRows(t, r.stdout), []string{topic + "/0 group does not exist", topic + "/1 group does not exist"}; !slices.Equal(got, want) {
		t.Errorf("delete-offsets of a missing group printed %q, want %q", got, want)
	}
	if !strings.Contains(r.stderr, "2 of 2 partitions not deleted") {
		t.Errorf("stderr %q", r.stderr)
	}

	for _, args := range [][]string{
		{group},                          // no --topic
		{"--topic", topic},               // no group
		{group, "--topic", topic + ":x"}, // bad partition
		{group, "--topic", topic, "--topic", topic + ":0"}, // a topic twice
		{group, "--topic", topic + "-missing"},             // no such topic, no offsets
	} {
		mustFail(t, "", append([]string{"group", "delete-offsets", "-b", b}, args...)...)
	}
}

// A group whose member subscribes to a topic keeps that topic's offsets;
// those of other topics go.
func TestGroupDeleteOffsetsSubscribed(t *testing.T) {
	b := groupBrokers(t)
	adm := testAdmin(t, b)
	topic := uniqueTopic(t)
	other := topic + "-other"
	group := topic + "-g"
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)
	mustRun(t, "", "topic", "create", other, "-p", "1", "-r", "1", "-b", b)
	mustRun(t, "a\nb\n", "produce", other, "-b", b)
	commit(t, adm, group, topic, map[int32]int64{0: 0})
	commit(t, adm, group, other, map[int32]int64{0: 1})

	m := startMember(t, "consume", topic, "-g", group, "--assignor", "range", "-b", b)
	waitStable(t, b, group, 1)
	r := mustFail(t, "", "group", "delete-offsets", group, "--topic", topic, "--topic", other, "-b", b)
	want := []string{
		topic + "/0 the group's members subscribe to this topic",
		topic + "/1 the group's members subscribe to this topic",
		other + "/0 deleted",
	}
	if got := deleteOffsetsRows(t, r.stdout); !slices.Equal(got, want) {
		t.Errorf("delete-offsets of an active group printed %q, want %q", got, want)
	}
	if !strings.Contains(r.stderr, "2 of 3 partitions not deleted") {
		t.Errorf("stderr %q", r.stderr)
	}
	if got := committed(t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 0}) {
		t.Errorf("offsets of the subscribed topic: %v, want them kept", got)
	}
	if got := committed(t, adm, group, other); len(got) != 0 {
		t.Errorf("offsets of the topic nobody subscribes to: %v, want none", got)
	}
	if res := m.stop(t); res.code != 0 {
		t.Errorf("member exit %d: %s", res.code, res.stderr)
	}
}
