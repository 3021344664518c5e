package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/cli"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/uplink"
)

// uplinkStatusCLI runs `wren uplink status` against b.
func uplinkStatusCLI(t *testing.T, b *Broker, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), cli.Env{Stdout: &out, Stderr: &errOut},
		append([]string{"wren", "uplink", "status", "-b", b.Addr().String(), "--timeout", "30s"}, args...))
	return code, out.String() + errOut.String()
}

// clusterHealthHTTP is b's /v1/cluster/health.
func clusterHealthHTTP(t *testing.T, b *Broker) health.ClusterHealth {
	t.Helper()
	code, body := httpGet(t, b, "/v1/cluster/health")
	var h health.ClusterHealth
	if code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil {
		t.Fatalf("/v1/cluster/health: %d %s", code, body)
	}
	return h
}

// TestUplinkStatusFigures: while the far side is away the edge's status
// shows each partition's backlog in records, bytes and seconds, the link
// down, the cluster degraded (still healthy) in /v1/cluster/health, in
// /metrics and in `wren uplink status` (text and JSON); once the far side
// is back and has everything, every backlog figure is 0, the link up and
// the cluster no longer degraded.
func TestUplinkStatusFigures(t *testing.T) {
	ctx := testContext(t)
	startCentral := fixedCentral(t)
	central := startCentral()
	edge := uplinkEdgeOpts(t, t.TempDir(), central, Options{UplinkRefresh: 100 * time.Millisecond, UplinkDownAfter: 500 * time.Millisecond})
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, "sensors.f"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ecl, "sensors.f", 2, 0, 100)
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.f", 200)

	caughtUp := func(st []uplink.Status) bool {
		if len(st) != 1 || !st[0].Up || st[0].LastUp.IsZero() || len(st[0].Partitions) != 2 {
			return false
		}
		for _, p := range st[0].Partitions {
			if !p.Active || !p.Leader || p.Backlog != 0 || p.BacklogBytes != 0 || p.BacklogSeconds != 0 || p.Err != "" {
				return false
			}
		}
		return true
	}
	var st []uplink.Status
	pollFor(t, "the link caught up", 20*time.Second, func() bool { st = edge.UplinkStatus(); return caughtUp(st) })
	if st[0].Sent != 200 || st[0].SentBytes < 200*10 {
		t.Fatalf("sent %d records, %d bytes, want 200 records of at least 10 bytes", st[0].Sent, st[0].SentBytes)
	}

	// The far side goes away; the edge takes 300 records a partition.
	if err := central.Close(); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ecl, "sensors.f", 2, 100, 300)
	pollFor(t, "the backlog counted and the link down", 20*time.Second, func() bool {
		st = edge.UplinkStatus()
		if len(st) != 1 || st[0].Up || len(st[0].Partitions) != 2 || st[0].DownFor(time.Now()) <= 500*time.Millisecond {
			return false
		}
		for _, p := range st[0].Partitions {
			if p.Backlog != 300 || p.BacklogBytes <= 0 || p.BacklogSeconds <= 0 {
				return false
			}
		}
		return true
	})
	for _, p := range st[0].Partitions {
		// Key and value alone are 10 bytes a record or more; records in
		// batches as stored are not twenty times that.
		if p.BacklogBytes < 300*10 || p.BacklogBytes > 300*200 {
			t.Errorf("%s[%d]: backlog %d bytes for 300 records", p.Topic, p.Partition, p.BacklogBytes)
		}
		// The records carry timestamps of November 2023.
		if want := time.Since(time.UnixMilli(1_700_000_000_000 + 100)).Seconds(); p.BacklogSeconds < want-60 || p.BacklogSeconds > want+60 {
			t.Errorf("%s[%d]: oldest record %.0f s old, want about %.0f", p.Topic, p.Partition, p.BacklogSeconds, want)
		}
	}

	// /v1/cluster/health: the link, down, makes the cluster degraded but
	// not unhealthy.
	h := clusterHealthHTTP(t, edge)
	if !h.Healthy || !h.Degraded || !slices.Contains(h.DegradedReasons, health.ReasonUplinkDown) || len(h.Uplinks) != 1 {
		t.Fatalf("health with the far side away: healthy %v degraded %v %v, uplinks %+v", h.Healthy, h.Degraded, h.DegradedReasons, h.Uplinks)
	}
	if u := h.Uplinks[0]; u.Link != "central" || u.Up || !u.Down || u.BacklogRecords != 600 || u.BacklogBytes <= 0 || u.BacklogSeconds <= 0 ||
		len(u.Partitions) != 2 || u.LastUpMs == 0 {
		t.Fatalf("health's uplink: %+v", u)
	}
	// /metrics.
	m := scrape(t, edge)
	for series, ok := range map[string]func(float64) bool{
		`wren_uplink_up{link="central"}`:                                                               func(v float64) bool { return v == 0 },
		`wren_uplink_down_seconds{link="central"}`:                                                     func(v float64) bool { return v > 0.5 },
		`wren_uplink_sent_bytes_total{link="central"}`:                                                 func(v float64) bool { return v >= 2000 },
		`wren_uplink_backlog_records{link="central",topic="sensors.f",partition="1",direction="push"}`: func(v float64) bool { return v == 300 },
		`wren_uplink_backlog_bytes{link="central",topic="sensors.f",partition="1",direction="push"}`:   func(v float64) bool { return v >= 3000 },
		`wren_uplink_backlog_seconds{link="central",topic="sensors.f",partition="1",direction="push"}`: func(v float64) bool { return v > 0 },
		`wren_uplink_last_up_timestamp_seconds{link="central"}`:                                        func(v float64) bool { return v > 0 },
	} {
		if v, present := m[series]; !present || !ok(v) {
			t.Errorf("/metrics %s = %v (present %v)", series, v, present)
		}
	}
	// `wren uplink status`, text and JSON.
	code, out := uplinkStatusCLI(t, edge)
	if code != 0 || !strings.Contains(out, "LINK central: backlog 600 records") || !strings.Contains(out, "node 1: DOWN for") ||
		!strings.Contains(out, "sensors.f") {
		t.Fatalf("uplink status exited %d:\n%s", code, out)
	}
	t.Logf("wren uplink status with the far side away:\n%s", out)
	code, out = uplinkStatusCLI(t, edge, "--format", "json")
	var r struct {
		Links []struct {
			Link           string `json:"link"`
			BacklogRecords int64  `json:"backlog_records"`
			BacklogBytes   int64  `json:"backlog_bytes"`
			Nodes          []health.UplinkState
			Partitions     []struct {
				Node           int32   `json:"node"`
				Topic          string  `json:"topic"`
				BacklogRecords int64   `json:"backlog_records"`
				BacklogSeconds float64 `json:"backlog_seconds"`
			} `json:"partitions"`
		} `json:"links"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Links) != 1 || r.Links[0].Link != "central" ||
		r.Links[0].BacklogRecords != 600 || r.Links[0].BacklogBytes <= 0 || len(r.Links[0].Nodes) != 1 || len(r.Links[0].Partitions) != 2 ||
		r.Links[0].Partitions[0].BacklogRecords != 300 || r.Links[0].Partitions[0].BacklogSeconds <= 0 {
		t.Fatalf("uplink status --format json exited %d:\n%s", code, out)
	}

	// The far side comes back: everything is forwarded and every
	// backlog figure falls to 0.
	central = startCentral()
	_, cadm = newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.f", 800)
	pollFor(t, "the link caught up again", 30*time.Second, func() bool { st = edge.UplinkStatus(); return caughtUp(st) })
	if st[0].Sent != 800 {
		t.Fatalf("sent %d records, want 800", st[0].Sent)
	}
	pollFor(t, "the cluster no longer degraded", 20*time.Second, func() bool {
		h = clusterHealthHTTP(t, edge)
		return h.Healthy && !h.Degraded && len(h.Uplinks) == 1 && h.Uplinks[0].Up && h.Uplinks[0].BacklogRecords == 0
	})
	code, out = uplinkStatusCLI(t, edge)
	if code != 0 || !strings.Contains(out, "LINK central: backlog 0 records") || !strings.Contains(out, "node 1: up") {
		t.Fatalf("uplink status after catching up exited %d:\n%s", code, out)
	}
}

// uplinkCLI runs `wren uplink ARGS...` against b.
func uplinkCLI(t *testing.T, b *Broker, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), cli.Env{Stdout: &out, Stderr: &errOut},
		append(append([]string{"wren", "uplink"}, args...), "-b", b.Addr().String(), "--timeout", "30s"))
	return code, out.String() + errOut.String()
}

// TestUplinkPauseResume: `wren uplink pause` stops the link (its records
// wait in the local log, the status says paused, not down, and the
// cluster is not degraded), the pause outlives a restart of the edge, and
// `wren uplink resume` forwards what waited, each record once. The pause
// is cluster-wide only and takes a boolean.
func TestUplinkPauseResume(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	edgeDir := t.TempDir()
	o := Options{UplinkRefresh: 100 * time.Millisecond, UplinkDownAfter: 300 * time.Millisecond}
	edge := uplinkEdgeOpts(t, edgeDir, central, o)
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	edgeID := clusterOf(t, ctx, eadm)
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, "sensors.g"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ecl, "sensors.g", 2, 0, 100)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.g", 200)

	// Refused: a pause for one broker, a value that is not a boolean.
	for _, c := range []struct {
		value  string
		broker []int32
	}{{"true", []int32{edge.cfg.NodeID}}, {"maybe", nil}} {
		v := c.value
		res, err := eadm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: config.UplinkPausedKey("central"), Value: &v}}, c.broker...)
		if err == nil && res[0].Err == nil {
			t.Fatalf("uplink.central.paused = %q on brokers %v was accepted", v, c.broker)
		}
	}

	if code, out := uplinkCLI(t, edge, "pause", "central"); code != 0 || !strings.Contains(out, "uplink central paused") {
		t.Fatalf("uplink pause exited %d: %s", code, out)
	}
	paused := func(b *Broker, backlog int64) func() bool {
		return func() bool {
			st := b.UplinkStatus()
			if len(st) != 1 || !st[0].Paused || st[0].Up || len(st[0].Partitions) != 2 {
				return false
			}
			for _, p := range st[0].Partitions {
				if p.Active || p.Backlog != backlog {
					return false
				}
			}
			return true
		}
	}
	pollFor(t, "the link paused", 20*time.Second, paused(edge, 0))
	produceUplink(t, ctx, ecl, "sensors.g", 2, 100, 50)
	pollFor(t, "the paused link's backlog counted", 20*time.Second, paused(edge, 50))

	// Paused for longer than the down threshold: not down, not degraded.
	pollFor(t, "the health facts saying paused", 20*time.Second, func() bool {
		h := clusterHealthHTTP(t, edge)
		return len(h.Uplinks) == 1 && h.Uplinks[0].Paused && !h.Uplinks[0].Down && !h.Degraded && h.Healthy &&
			time.Since(edge.UplinkStatus()[0].Started) > time.Second
	})
	if code, out := uplinkStatusCLI(t, edge); code != 0 || !strings.Contains(out, "node 1: paused") || !strings.Contains(out, "paused  ") {
		t.Fatalf("uplink status of a paused link exited %d:\n%s", code, out)
	}
	ends, err := cadm.ListEndOffsets(ctx, "site-7.sensors.g")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != 100 {
			t.Errorf("far partition %d ends at %d while the link is paused, want 100", o.Partition, o.Offset)
		}
	})

	// The pause is in the metadata log: a restarted edge stays paused.
	ecl.Close()
	if err := edge.Close(); err != nil {
		t.Fatal(err)
	}
	edge = uplinkEdgeOpts(t, edgeDir, central, o)
	pollFor(t, "the restarted edge's link paused", 20*time.Second, func() bool {
		st := edge.UplinkStatus()
		return len(st) == 1 && st[0].Paused && !st[0].Up
	})

	if code, out := uplinkCLI(t, edge, "resume", "central", "--format", "json"); code != 0 || !strings.Contains(out, `"paused": false`) {
		t.Fatalf("uplink resume exited %d: %s", code, out)
	}
	waitFarRecords(t, ctx, cadm, "site-7.sensors.g", 300)
	checkFar(t, readFar(t, ctx, central, "site-7.sensors.g", 2, 300), edgeID, "sensors.g", 2, 150)
	pollFor(t, "the resumed link up with nothing left", 20*time.Second, func() bool {
		st := edge.UplinkStatus()
		if len(st) != 1 || st[0].Paused || !st[0].Up || len(st[0].Partitions) != 2 {
			return false
		}
		for _, p := range st[0].Partitions {
			if !p.Active || p.Backlog != 0 {
				return false
			}
		}
		return true
	})
}
