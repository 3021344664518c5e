package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/kafka"
)

// recordingAuthorizer refuses CREATE on the cluster (so each topic's
// CREATE decides) and everything on the topics in deny, and keeps every
// question about a topic.
type recordingAuthorizer struct {
	deny map[string]bool

	mu    sync.Mutex
	asked []topicQuestion
}

type topicQuestion struct {
	principal, host, topic string
	op                     kmsg.ACLOperation
}

func (a *recordingAuthorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if rt == kmsg.ACLResourceTypeTopic {
		a.mu.Lock()
		a.asked = append(a.asked, topicQuestion{principal, host, name, op})
		a.mu.Unlock()
	}
	if rt == kmsg.ACLResourceTypeCluster && op == kmsg.ACLOperationCreate {
		return false
	}
	return !a.deny[name]
}

func (a *recordingAuthorizer) about(topic string) []topicQuestion {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []topicQuestion
	for _, q := range a.asked {
		if q.topic == topic {
			out = append(out, q)
		}
	}
	return out
}

// TestAuthorizationForwardedThreeNodes: a CreateTopics sent to a node that
// is not the controller is authorized there, forwarded with the client's
// principal and host, and authorized again on the controller as that
// client: a topic only the controller refuses is not created.
func TestAuthorizationForwardedThreeNodes(t *testing.T) {
	auths := make([]*recordingAuthorizer, 3)
	brokers := startThreeNodes(t, nil, func(id int) Options {
		a := &recordingAuthorizer{deny: map[string]bool{}}
		auths[id-1] = a
		return Options{Logger: testLogger(t), Authorizer: func() kafka.Authorizer { return a }}
	})
	ctrl := actingController(t, brokers)
	var via *Broker
	var ctrlAuth, viaAuth *recordingAuthorizer
	for i, b := range brokers {
		if b == ctrl {
			ctrlAuth = auths[i]
		} else if via == nil {
			via, viaAuth = b, auths[i]
		}
	}
	// Only the controller refuses "refused-there".
	ctrlAuth.deny["refused-there"] = true

	ctx := testContext(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(via.Addr().String()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, name := range []string{"allowed", "refused-there"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	r, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range r.(*kmsg.CreateTopicsResponse).Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if codes["allowed"] != 0 || codes["refused-there"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("codes %v, want allowed created and refused-there TOPIC_AUTHORIZATION_FAILED", codes)
	}
	if ctrl.Controller().Image().Topic("refused-there") != nil {
		t.Fatal("the controller created a topic it refuses")
	}
	if len(viaAuth.about("allowed")) == 0 {
		t.Error("the forwarding node did not authorize the request")
	}
	qs := ctrlAuth.about("refused-there")
	if len(qs) == 0 {
		t.Fatal("the controller did not authorize the forwarded request")
	}
	for _, q := range qs {
		if q.principal != kafka.AnonymousPrincipal || q.host != "127.0.0.1" {
			t.Errorf("the controller judged %q from %q, want the client, %s from 127.0.0.1", q.principal, q.host, kafka.AnonymousPrincipal)
		}
	}
}
