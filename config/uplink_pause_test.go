package config

import (
	"errors"
	"reflect"
	"testing"
)

// TestUplinkPausedKey: uplink.NAME.paused is a boolean of the
// cluster-wide layer only, and UplinksPaused reads the links it pauses.
func TestUplinkPausedKey(t *testing.T) {
	if k := UplinkPausedKey("central"); k != "uplink.central.paused" {
		t.Fatalf("key %q", k)
	}
	for _, c := range []struct {
		value     string
		perBroker bool
		want      error
	}{{"true", false, nil}, {"false", false, nil}, {"yes", false, ErrInvalidValue}, {"true", true, ErrNotDynamic}} {
		_, err := parseBrokerValue("uplink.central.paused", c.value, c.perBroker)
		if !errors.Is(err, c.want) {
			t.Errorf("%q (per broker %v): %v, want %v", c.value, c.perBroker, err, c.want)
		}
	}
	// The controller checks values only.
	if err := ValidateBrokerConfig("uplink.central.paused", "true", true); err != nil {
		t.Errorf("ValidateBrokerConfig: %v", err)
	}
	if err := ValidateBrokerConfig("uplink.Bad.Name.paused", "true", false); !errors.Is(err, ErrUnknownConfig) {
		t.Errorf("a key naming no valid link: %v, want unknown", err)
	}
	got := UplinksPaused(map[string]string{"uplink.a.paused": "true", "uplink.b.paused": "false", "log.retention.ms": "1"})
	if !reflect.DeepEqual(got, map[string]bool{"a": true}) {
		t.Fatalf("UplinksPaused: %v", got)
	}
}
