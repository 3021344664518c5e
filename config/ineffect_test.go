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
	if _, ignored := NotInEffect("message.max.bytes"); ignored {
		t.Error("message.max.bytes: reported not in effect")
	}
}

func TestCheckAlter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broker bool
		want   error
		text   string
	}{
		{"controller.quorum.election.timeout.ms", true, ErrInvalidValue, "controller.quorum.election.timeout.ms is not in effect in wren yet"},
		{"max.connections", true, nil, ""},
		{"segment.jitter.ms", false, ErrInvalidValue, "segment.jitter.ms is not in effect in wren yet"},
		{"log.roll.jitter.ms", true, ErrInvalidValue, "log.roll.jitter.ms is not in effect"},
		{"log.cleaner.backoff.ms", true, ErrNotDynamic, "only at start"},
		{"message.max.bytes", true, nil, ""},
		{"max.message.bytes", false, nil, ""},
	} {
		err := CheckAlter(tc.name, tc.broker)
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
