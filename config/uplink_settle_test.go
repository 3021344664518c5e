package config

import (
	"strings"
	"testing"
	"time"
)

// TestUplinkTailSettle: tail.settle.ms defaults to 5 s, takes 0 (trust
// the far tail at once), and refuses a negative value with the key.
func TestUplinkTailSettle(t *testing.T) {
	base := "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\n"
	for in, want := range map[string]time.Duration{"": DefaultUplinkTailSettle, "tail.settle.ms = 0\n": 0, "tail.settle.ms = 1500\n": 1500 * time.Millisecond} {
		c, err := Parse("config.toml", []byte(base+in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := c.Uplinks[0].TailSettle; got != want {
			t.Errorf("%q: TailSettle %v, want %v", in, got, want)
		}
	}
	_, err := Parse("config.toml", []byte(base+"tail.settle.ms = -1\n"))
	if err == nil || !strings.Contains(err.Error(), "config.toml:4:18: uplink.a.tail.settle.ms: invalid value -1") {
		t.Fatalf("negative tail.settle.ms: %v", err)
	}
}
