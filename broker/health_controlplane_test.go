package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/internal/health"
)

// `wren cluster health` and /v1/cluster/health show what only the
// metadata image knows: fenced brokers (down to clients, so the cluster
// is unhealthy to both), the controller's epoch, and the data-loss
// ledger after an unclean election.
func TestClusterHealthControlPlane(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	c := b.Controller()
	ctx := context.Background()
	// Two more brokers as the controller would know them; this test
	// drives their lives through the controller.
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, cluster.BrokerRegistrationRecord{BrokerID: id}, true); err != nil {
			t.Fatal(err)
		}
	}
	yes := "true"
	res, err := c.CreateTopics(ctx, []cluster.CreateTopic{{Name: "lossy", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: [][]int32{{2, 3}}, Configs: map[string]*string{"unclean.leader.election.enable": &yes}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create lossy: %v %+v", err, res)
	}
	for _, id := range []int32{2, 3} {
		if err := c.FenceBroker(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Broker 3 comes back after an unclean shutdown; the topic allows
	// unclean elections, so the controller elects it and records the
	// offsets that may be lost.
	if err := c.RegisterBroker(ctx, cluster.BrokerRegistrationRecord{BrokerID: 3, Fenced: true}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.UnfenceBroker(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Topic("lossy").Partitions[0]; p.Leader != 3 {
		t.Fatalf("lossy-0 after broker 3 came back: %+v", p)
	}

	check := func(where string, h health.ClusterHealth, wantDown bool) {
		t.Helper()
		if len(h.FencedNodes) != 1 || h.FencedNodes[0] != 2 {
			t.Fatalf("%s: fenced nodes %v, want [2]", where, h.FencedNodes)
		}
		if len(h.DataLossLedger) != 1 {
			t.Fatalf("%s: ledger %+v", where, h.DataLossLedger)
		}
		if e := h.DataLossLedger[0]; e.Topic != "lossy" || e.Partition != 0 || e.NewLeader != 3 || e.Reason == "" || e.MetadataOffset == 0 {
			t.Fatalf("%s: ledger entry %+v", where, e)
		}
		if down := strings.Contains(strings.Join(h.UnhealthyReasons, ","), health.ReasonNodesDown); down != wantDown {
			t.Fatalf("%s: unhealthy reasons %v", where, h.UnhealthyReasons)
		}
	}
	code, out := clusterHealthCLI(t, b, "--format", "json")
	if code != 1 {
		t.Fatalf("wren cluster health with broker 2 fenced: exit %d\n%s", code, out)
	}
	var h health.ClusterHealth
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &h); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	check("wren cluster health", h, true)
	code, out = clusterHealthCLI(t, b)
	for _, want := range []string{"Controller epoch:", "Nodes fenced:                       [2]", "Data-loss ledger entries:           1",
		"lossy/0 leader epoch", "election of 3"} {
		if !strings.Contains(out, want) {
			t.Fatalf("wren cluster health does not say %q:\n%s", want, out)
		}
	}

	// The endpoint says what the command says: a fenced peer is down, so
	// the cluster is unhealthy; this node still serves, so it is ready.
	if code, body := httpGet(t, b, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz with a peer fenced: %d %s", code, body)
	}
	code, body := httpGet(t, b, "/v1/cluster/health")
	if code != http.StatusOK {
		t.Fatalf("/v1/cluster/health: %d %s", code, body)
	}
	h = health.ClusterHealth{}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	check("/v1/cluster/health", h, true)
}
