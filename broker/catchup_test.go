package broker

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
)

// A node of a three-voter cluster that reaches no controller (here: the
// other two are not started yet) serves no client: /readyz says why, and
// a Metadata request sent meanwhile waits in the listen backlog. Once a
// majority is up and it has caught up with the controller, that request
// is answered, naming the controller.
func TestMinorityNodeWaitsForCatchUp(t *testing.T) {
	ports := freePorts(t, 3)
	start := func(id int) *Broker {
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(quorumConfigText(id, filepath.Join(t.TempDir(), "data"), ports)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Start(cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	b1 := start(1)
	code, body := httpGet(t, b1, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no controller reachable") {
		t.Fatalf("/readyz of a node alone among three voters: %d %q", code, body)
	}

	type answer struct {
		md  *kmsg.MetadataResponse
		err error
	}
	answered := make(chan answer, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr().String()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			answered <- answer{err: err}
			return
		}
		answered <- answer{md: resp.(*kmsg.MetadataResponse)}
	}()
	// Still alone: still not ready, and nothing answered.
	if code, body := httpGet(t, b1, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no controller reachable") {
		t.Fatalf("/readyz of a node alone among three voters: %d %q", code, body)
	}
	select {
	case a := <-answered:
		t.Fatalf("a node that reaches no controller answered Metadata: %+v %v", a.md, a.err)
	default:
	}

	start(2)
	start(3)
	a := <-answered
	if a.err != nil {
		t.Fatalf("the Metadata request sent before the catch-up: %v", a.err)
	}
	if a.md.ControllerID < 0 {
		t.Fatalf("first Metadata answer after the catch-up names no controller: %+v", a.md)
	}
	if s := b1.catchUpStatus(); s != "" {
		t.Fatalf("node 1 answered clients while %s", s)
	}
}
