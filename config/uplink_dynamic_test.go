package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestUplinkRuntimeKeys: uplink.NAME.KEY takes a link table's keys, each
// value checked by the file's code, on the cluster-wide layer only; a
// password is refused with the message naming the key and the ways a
// password is given.
func TestUplinkRuntimeKeys(t *testing.T) {
	if k := UplinkKey("central", "topics"); k != "uplink.central.topics" {
		t.Fatalf("UplinkKey: %q", k)
	}
	for _, c := range []struct {
		key, value string
		perBroker  bool
		want       error
		says       string
	}{
		{"uplink.central.bootstrap.servers", "a:1,b:2", false, nil, ""},
		{"uplink.central.topics", "alerts, sensors\\..*", false, nil, ""},
		{"uplink.central.compression", "zstd", false, nil, ""},
		{"uplink.central.max.backlog.bytes", "1048576", false, nil, ""},
		{"uplink.central.enabled", "false", false, nil, ""},
		{"uplink.central.pull.topics", "site-7\\.commands\\..*, config", false, nil, ""},
		{"uplink.central.pull.local.topic.prefix", "central.", false, nil, ""},
		{"uplink.central.pull.local.topic.prefix", "a/b", false, ErrInvalidValue, "uplink.central.pull.local.topic.prefix"},
		{"uplink.central.pull.topics", "(", false, ErrInvalidValue, "uplink.central.pull.topics"},
		{"uplink.central.compression", "brotli", false, ErrInvalidValue, "uplink.central.compression"},
		{"uplink.central.bootstrap.servers", "nohostport", false, ErrInvalidValue, "uplink.central.bootstrap.servers"},
		{"uplink.central.max.backlog.bytes", "-1", false, ErrInvalidValue, "uplink.central.max.backlog.bytes"},
		{"uplink.central.tail.settle.ms", "x", false, ErrInvalidValue, "uplink.central.tail.settle.ms"},
		{"uplink.central.topics", "(", false, ErrInvalidValue, "uplink.central.topics"},
		{"uplink.central.start.position", "yesterday", false, ErrInvalidValue, "uplink.central.start.position"},
		{"uplink.central.sasl.password", "secret", false, ErrInvalidValue, "WREN_UPLINK_CENTRAL_PASSWORD"},
		{"uplink.central.sasl.jaas.config", "x", false, ErrInvalidValue, "uplink.central.sasl.password.file"},
		{"uplink.central.no.such.key", "1", false, ErrUnknownConfig, "uplink.central.no.such.key"},
		{"uplink.central.topics", "alerts", true, ErrNotDynamic, "cluster-wide"},
	} {
		_, err := parseBrokerValue(c.key, c.value, c.perBroker)
		if !errors.Is(err, c.want) || err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s = %q (per broker %v): %v, want %v saying %q", c.key, c.value, c.perBroker, err, c.want, c.says)
		}
		// The controller checks values only, the same way.
		if c.want != ErrNotDynamic {
			if err := ValidateBrokerConfig(c.key, c.value, true); !errors.Is(err, c.want) {
				t.Errorf("ValidateBrokerConfig %s = %q: %v, want %v", c.key, c.value, err, c.want)
			}
		}
	}
	if !IsUplinkKey("uplink.a.topics") || !IsUplinkKey("uplink.a.paused") || IsUplinkKey("uplink.A.topics") || IsUplinkKey("log.retention.ms") {
		t.Error("IsUplinkKey")
	}
}

// TestUplinkRuntimeLayer: the cluster-wide layer's run-time links are
// read as file tables are, defaults included; a link missing a required
// key, or with sasl.* keys its protocol does not use, is refused as a
// whole with the key named; a change on one broker's layer is refused;
// WithDynamic leaves the links to the uplinks.
func TestUplinkRuntimeLayer(t *testing.T) {
	layer := map[string]string{
		"uplink.central.bootstrap.servers": "central:9092,central-2:9092",
		"uplink.central.topics":            "alerts,sensors\\..*",
		"uplink.central.compression":       "ZSTD",
		"uplink.central.tail.settle.ms":    "0",
		"uplink.central.paused":            "true",
		"uplink.filelink.paused":           "true", // pauses a file's link: no run-time link
		"log.retention.ms":                 "1000",
	}
	links, errs := RuntimeUplinks(layer)
	if len(errs) != 0 || len(links) != 1 {
		t.Fatalf("links %+v, errors %v", links, errs)
	}
	u := links[0]
	if u.Name != "central" || !u.Enabled || !slices.Equal(u.BootstrapServers, []string{"central:9092", "central-2:9092"}) ||
		u.Compression != "zstd" || u.TailSettle != 0 || u.StartPosition != "earliest" ||
		u.MaxBacklogBytes != DefaultUplinkMaxBacklogBytes || u.BacklogFullPolicy != BacklogDropOldest || u.SecurityProtocol != ProtocolPlaintext {
		t.Errorf("central: %+v", u)
	}
	if !u.Matches("alerts") || !u.Matches("sensors.a") || u.Matches("other") {
		t.Error("central's topics")
	}
	if err := CheckUplinkLayer(layer); err != nil {
		t.Fatalf("CheckUplinkLayer: %v", err)
	}
	if err := CheckUplinkChange("", []string{"uplink.central.topics"}, layer); err != nil {
		t.Fatalf("CheckUplinkChange: %v", err)
	}

	for _, c := range []struct {
		name        string
		set, delete []string
		says        string
	}{
		{"no topics", nil, []string{"uplink.central.topics"}, "uplink.central.topics"},
		{"no servers", nil, []string{"uplink.central.bootstrap.servers"}, "uplink.central.bootstrap.servers"},
		{"sasl without SASL", []string{"uplink.central.sasl.mechanism=PLAIN"}, nil, "uplink.central.sasl.mechanism: has no effect"},
		{"SASL without user", []string{"uplink.central.security.protocol=SASL_PLAINTEXT", "uplink.central.sasl.mechanism=PLAIN"}, nil, "uplink.central.sasl.username"},
		{"ssl without TLS", []string{"uplink.central.ssl.truststore.location=/ca.pem"}, nil, "uplink.central.ssl.truststore.location"},
		{"a bad value", []string{"uplink.central.compression=brotli"}, nil, "uplink.central.compression"},
	} {
		l := map[string]string{}
		for k, v := range layer {
			l[k] = v
		}
		var keys []string
		for _, kv := range c.set {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = v
			keys = append(keys, k)
		}
		for _, k := range c.delete {
			delete(l, k)
			keys = append(keys, k)
		}
		err := CheckUplinkChange("", keys, l)
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an invalid value saying %q", c.name, err, c.says)
		}
		if links, errs := RuntimeUplinks(l); len(links) != 0 || len(errs) == 0 {
			t.Errorf("%s: the node runs %+v (errors %v)", c.name, links, errs)
		}
	}
	// A change that touches no link key is not held up by the links.
	bad := map[string]string{"uplink.x.topics": "a"}
	if err := CheckUplinkChange("", []string{"log.retention.ms"}, bad); err != nil {
		t.Errorf("a change of another key: %v", err)
	}
	// Removing every key of a link is fine.
	if err := CheckUplinkChange("", []string{"uplink.x.topics"}, map[string]string{}); err != nil {
		t.Errorf("removing a link: %v", err)
	}
	// One broker's layer takes no link.
	if err := CheckUplinkChange("1", []string{"uplink.x.topics"}, bad); !errors.Is(err, ErrNotDynamic) {
		t.Errorf("a link on one broker's layer: %v", err)
	}

	// The node's effective config leaves the links alone, and refuses one
	// on its own layer.
	c := mustParse(t, "[broker]\nnode.id = 1\n")
	n, err := c.WithDynamic(&Dynamic{ClusterDefault: layer})
	if err != nil {
		t.Fatalf("WithDynamic: %v", err)
	}
	if n.TopicDefaults.RetentionMs != 1000 {
		t.Errorf("log.retention.ms not applied: %d", n.TopicDefaults.RetentionMs)
	}
	if _, err := c.WithDynamic(&Dynamic{Broker: map[string]string{"uplink.central.topics": "a"}}); !errors.Is(err, ErrNotDynamic) {
		t.Errorf("a link on one broker's layer: %v", err)
	}
}
