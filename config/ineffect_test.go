package config

import (
	"errors"
	"strings"
	"testing"
)

// Every name in the tables of settings not (or not dynamically) in effect
// is a real setting, so a rename cannot leave a stale entry behind.
func TestNotInEffectNames(t *testing.T) {
	for name := range notInEffect {
		_, broker := byName[name]
		_, topic := topics[name]
		if !broker && !topic {
			t.Errorf("notInEffect: %s is neither a broker setting nor a topic config", name)
		}
		if e, ok := byName[name]; ok && e.Topic != "" && e.Topic != name {
			t.Errorf("notInEffect: %s is the default of topic config %s: list the topic config", name, e.Topic)
		}
	}
	for name := range startOnly {
		e, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("startOnly: %s is not a broker setting", name)
		case e.Mode == ReadOnly:
			t.Errorf("startOnly: %s is read-only already", name)
		case e.Topic != "":
			t.Errorf("startOnly: %s is a topic default, which is applied at run time", name)
		}
	}
	// A broker default of an ignored topic config is ignored too.
	if _, ignored := NotInEffect("log.roll.jitter.hours"); !ignored {
		t.Error("log.roll.jitter.hours: in effect, but segment.jitter.ms is not")
	}
	for _, name := range []string{"message.max.bytes", "unclean.leader.election.enable"} {
		if _, ignored := NotInEffect(name); ignored {
			t.Errorf("%s: reported not in effect", name)
		}
	}
	for name := range clusterOnly {
		if e, ok := byName[name]; !ok || e.Topic == "" || e.Mode != ClusterWide {
			t.Errorf("clusterOnly: %s is not a cluster-wide default of a topic config", name)
		}
	}
}

func TestCheckAlter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target AlterTarget
		want   error
		text   string
	}{
		{"controller.quorum.election.timeout.ms", AlterBroker, ErrInvalidValue, "controller.quorum.election.timeout.ms is not in effect in wren yet"},
		{"max.connections", AlterBroker, nil, ""},
		{"segment.jitter.ms", AlterTopic, ErrInvalidValue, "segment.jitter.ms is not in effect in wren yet"},
		{"compression.type", AlterTopic, ErrInvalidValue, "compression.type is not in effect in wren yet"},
		{"log.roll.jitter.ms", AlterClusterDefault, ErrInvalidValue, "log.roll.jitter.ms is not in effect"},
		{"log.cleaner.backoff.ms", AlterBroker, ErrNotDynamic, "only at start"},
		{"log.cleaner.backoff.ms", AlterClusterDefault, ErrNotDynamic, "only at start"},
		{"message.max.bytes", AlterBroker, nil, ""},
		{"max.message.bytes", AlterTopic, nil, ""},
		// Unclean election is in effect on a topic and cluster-wide; only
		// the controller reads it, so one broker's layer is refused.
		{"unclean.leader.election.enable", AlterTopic, nil, ""},
		{"unclean.leader.election.enable", AlterClusterDefault, nil, ""},
		{"unclean.leader.election.enable", AlterBroker, ErrNotDynamic, "cluster-wide default"},
	} {
		err := CheckAlter(tc.name, tc.target)
		if !errors.Is(err, tc.want) || (err != nil && !strings.Contains(err.Error(), tc.text)) {
			t.Errorf("CheckAlter(%s): %v, want %v containing %q", tc.name, err, tc.want, tc.text)
		}
	}
}

// A file that sets ignored settings loads, and Warnings names each one
// with its line, in file order.
func TestWarnings(t *testing.T) {
	c, err := Parse("w.toml", []byte("[cluster]\ncontroller.quorum.election.timeout.ms = 1000\n[broker]\nmax.connections = 10\n[storage]\nlog.roll.jitter.hours = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	var got []string
	for _, w := range ws {
		got = append(got, w.String())
	}
	want := []string{
		"w.toml:2:1: warning: controller.quorum.election.timeout.ms is not in effect in wren yet (the election times out after controller.quorum.fetch.timeout.ms plus up to controller.quorum.election.backoff.max.ms)",
		"w.toml:6:1: warning: log.roll.jitter.hours is not in effect in wren yet (segments roll at segment.ms exactly)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c, err := Parse("off.toml", []byte("[http]\nlisten = \"\"\n")); err != nil || len(c.Warnings()) != 0 {
		t.Errorf("http.listen = \"\" (no HTTP server, as now): %v, warnings %v", err, c.Warnings())
	}
	if len(Default().Warnings()) != 0 {
		t.Error("the defaults warn")
	}
}

// unclean.leader.election.enable is in effect: set in the file it loads
// into the topic defaults the controller's elections fall back to, with
// no warning.
func TestUncleanElectionInEffect(t *testing.T) {
	c, err := Parse("u.toml", []byte("[replication]\nunclean.leader.election.enable = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.TopicDefaults.UncleanLeaderElectionEnable {
		t.Error("unclean.leader.election.enable = true did not reach the topic defaults")
	}
	if ws := c.Warnings(); len(ws) != 0 {
		t.Errorf("warnings %v", ws)
	}
}
