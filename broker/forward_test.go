package broker

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startThreeInProcess starts a three-broker loopback cluster and waits
// until all three agree on a controller and list each other.
func startThreeInProcess(t *testing.T) []*Broker {
	t.Helper()
	return startThreeBrokersWith(t, "")
}

// onlyThrough is a client that reaches every broker it is told of at one
// address: a client that can reach one node only (a NAT, a firewall, an
// SSH tunnel). Whatever broker kgo means to send to, node addr answers.
func onlyThrough(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	var d net.Dialer
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(5*time.Second),
		kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// kadm pointed at a follower only: every request that changes metadata
// is forwarded to the controller and answered with its answer, and the
// change is in the follower's own image when the answer arrives.
func TestForwardToControllerFromFollower(t *testing.T) {
	brokers := startThreeInProcess(t)
	ctrl := brokers[0].Controller().ControllerID()
	var f *Broker
	for i, b := range brokers {
		if int32(i+1) != ctrl {
			f = b
			break
		}
	}
	adm := onlyThrough(t, f.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := adm.CreateTopic(ctx, 2, 3, nil, "fwd"); err != nil {
		t.Fatalf("CreateTopics through follower: %v", err)
	}
	if tp := f.Controller().Image().Topic("fwd"); tp == nil || len(tp.Partitions) != 2 {
		t.Fatalf("after CreateTopics answered, the follower's image has %+v", tp)
	}
	// A second create gets the controller's TOPIC_ALREADY_EXISTS.
	res, err := adm.CreateTopic(ctx, 2, 3, nil, "fwd")
	if err == nil || res.Err == nil {
		t.Fatalf("second CreateTopics: %v %+v, want TOPIC_ALREADY_EXISTS", err, res)
	}
	// RF above the broker count: the controller's INVALID_REPLICATION_FACTOR.
	if _, err := adm.CreateTopic(ctx, 1, 4, nil, "too-wide"); err == nil {
		t.Fatal("CreateTopics with RF 4 on three brokers succeeded")
	}

	if _, err := adm.CreatePartitions(ctx, 2, "fwd"); err != nil {
		t.Fatalf("CreatePartitions through follower: %v", err)
	}
	if n := len(f.Controller().Image().Topic("fwd").Partitions); n != 4 {
		t.Fatalf("after CreatePartitions +2, the follower's image has %d partitions", n)
	}

	v := "60000"
	ir, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &v}}, "fwd")
	if err == nil {
		_, err = ir.On("fwd", nil)
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs through follower: %v", err)
	}
	if got := f.Controller().Image().Topic("fwd").Configs["retention.ms"]; got != "60000" {
		t.Fatalf("after IncrementalAlterConfigs, the follower's image has retention.ms %q", got)
	}
	w := "120000"
	ar, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &w}}, "fwd")
	if err == nil {
		_, err = ar.On("fwd", nil)
	}
	if err != nil {
		t.Fatalf("AlterConfigs through follower: %v", err)
	}
	if got := f.Controller().Image().Topic("fwd").Configs["retention.ms"]; got != "120000" {
		t.Fatalf("after AlterConfigs, the follower's image has retention.ms %q", got)
	}

	if _, err := adm.DeleteTopic(ctx, "fwd"); err != nil {
		t.Fatalf("DeleteTopics through follower: %v", err)
	}
	if f.Controller().Image().Topic("fwd") != nil {
		t.Fatal("after DeleteTopics answered, the follower's image still has the topic")
	}
	for _, b := range brokers {
		if b.Controller().Image().Topic("too-wide") != nil {
			t.Fatalf("node %d has topic too-wide", b.cfg.NodeID)
		}
	}
}

// kcat -L (librdkafka's Metadata) against each node of a three-node
// cluster: every node lists the three brokers at their addresses, the
// same controller, and a topic created through a follower. Skipped where
// kcat is not installed (Debian: apt-get install kcat).
func TestKcatListsEveryNode(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	brokers := startThreeInProcess(t)
	ctrl := brokers[0].Controller().ControllerID()
	follower := brokers[0]
	if ctrl == 1 {
		follower = brokers[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := onlyThrough(t, follower.Addr().String()).CreateTopic(ctx, 3, 3, nil, "listed"); err != nil {
		t.Fatal(err)
	}
	for i, b := range brokers {
		out, err := exec.CommandContext(ctx, kcat, "-L", "-J", "-m", "10", "-b", b.Addr().String()).Output()
		if err != nil {
			t.Fatalf("kcat -L against node %d: %v\n%s", i+1, err, out)
		}
		var md struct {
			Controller int32 `json:"controllerid"`
			Brokers    []struct {
				ID   int32  `json:"id"`
				Name string `json:"name"`
			} `json:"brokers"`
			Topics []struct {
				Topic      string            `json:"topic"`
				Partitions []json.RawMessage `json:"partitions"`
			} `json:"topics"`
		}
		if err := json.Unmarshal(out, &md); err != nil {
			t.Fatalf("kcat -L -J against node %d: %v\n%s", i+1, err, out)
		}
		if md.Controller != ctrl || len(md.Brokers) != 3 {
			t.Fatalf("kcat -L against node %d: controller %d, brokers %+v; want controller %d and three brokers", i+1, md.Controller, md.Brokers, ctrl)
		}
		for _, mb := range md.Brokers {
			if want := brokers[mb.ID-1].Addr().String(); mb.Name != want {
				t.Fatalf("kcat -L against node %d lists broker %d at %s, it listens on %s", i+1, mb.ID, mb.Name, want)
			}
		}
		listed := false
		for _, tp := range md.Topics {
			listed = listed || tp.Topic == "listed" && len(tp.Partitions) == 3
		}
		if !listed {
			t.Fatalf("kcat -L against node %d does not list topic listed with 3 partitions:\n%s", i+1, out)
		}
	}
}
