package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/peer"
)

// clientID names wren's tools in broker logs and quotas.
const clientID = "wren-cli"

// seedBrokers parses --bootstrap-server.
func seedBrokers(c *ucli.Context) ([]string, error) {
	var seeds []string
	for _, s := range strings.Split(c.String("bootstrap-server"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%w: --bootstrap-server is empty", ErrUsage)
	}
	return seeds, nil
}

// newClient opens a kgo client on --bootstrap-server with opts added.
func newClient(c *ucli.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := seedBrokers(c)
	if err != nil {
		return nil, err
	}
	all := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(clientID)}
	tc, err := clientTLS(c)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		all = append(all, kgo.DialTLSConfig(tc))
	}
	sasl, err := clientSASL(c)
	if err != nil {
		return nil, err
	}
	if sasl != nil {
		all = append(all, sasl)
	}
	all = append(all, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("cli: kafka client: %w", err)
	}
	return cl, nil
}

// newAdmin opens an admin client; close it with the returned kgo client.
func newAdmin(c *ucli.Context) (*kadm.Client, *kgo.Client, error) {
	cl, err := newClient(c)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	if d := c.Duration("timeout"); d > 0 {
		adm.SetTimeoutMillis(int32(min(d.Milliseconds(), 1<<31-1)))
	}
	return adm, cl, nil
}

// adminAction is the broker-facing part of an admin command. cl is the
// client under adm, for requests kadm does not wrap.
type adminAction func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error

// runAdmin opens an admin client, runs fn under --timeout and closes the
// client. Commands check their flags and arguments before, so that a usage
// error never waits on a broker.
func runAdmin(c *ucli.Context, fn adminAction) error {
	adm, cl, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := withTimeout(c)
	defer cancel()
	return noAnswer(c, cl, explainShardErrors(fn(ctx, adm, cl)))
}

// noAnswer says who did not answer and what was being done when err is a
// timeout: a bare "context deadline exceeded" after --timeout names
// neither the address nor the command. A broker that answers a plain
// Metadata request at once is up: then the request waited on something
// else, most often a cluster without a controller (its voters' majority
// down), which it says rather than ask whether the broker is up.
//
// Before that, a connection closed at its first request makes it probe
// the --bootstrap-server addresses: one that is a CONTROLLER listener gets
// an error that says so, instead of the client library's guess ("is TLS
// missing?").
func noAnswer(c *ucli.Context, cl *kgo.Client, err error) error {
	if err == nil || c.Context.Err() != nil {
		return err
	}
	if wrong := controllerListener(c, err); wrong != nil {
		return wrong
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if why := whyNoAnswer(c.Context, cl); why != "" {
		return fmt.Errorf("cli: %s: the broker at %s is up, but the request did not complete within --timeout %s: %s: %w",
			commandName(c), c.String("bootstrap-server"), c.Duration("timeout"), why, err)
	}
	return fmt.Errorf("cli: %s: no answer from the broker at %s within --timeout %s (is it up, and is this its client listener?): %w",
		commandName(c), c.String("bootstrap-server"), c.Duration("timeout"), err)
}

// probeTimeout bounds the probe of one address by controllerListener.
const probeTimeout = time.Second

// controllerListener returns the error for a client pointed at a wren
// node's CONTROLLER listener, or nil. That listener closes a client's
// connection at its first request, which franz-go reports as
// ErrFirstReadEOF ("is TLS missing?"); only then are the addresses probed,
// since the probe's handshake is an API key other brokers do not know.
func controllerListener(c *ucli.Context, err error) error {
	var closed *kgo.ErrFirstReadEOF
	if !errors.As(err, &closed) {
		return nil
	}
	seeds, serr := seedBrokers(c)
	if serr != nil {
		return nil
	}
	for _, addr := range seeds {
		ctx, cancel := context.WithTimeout(c.Context, probeTimeout)
		node, ok := peer.Probe(ctx, addr)
		cancel()
		if ok {
			return fmt.Errorf("cli: %s: %s is a wren CONTROLLER (peer) listener, node %d's, which only the cluster's own nodes talk to; clients use the PLAINTEXT listener, port %d by default (--bootstrap-server, WREN_BROKERS)",
				commandName(c), addr, node, defaultClientPort)
		}
	}
	return nil
}

// defaultClientPort is the PLAINTEXT listener's port in the default
// listeners.
const defaultClientPort = 9092

// whyNoAnswerTimeout bounds the Metadata request that tells a broker that
// is up from one that is not, after a timeout.
const whyNoAnswerTimeout = 2 * time.Second

// whyNoAnswer asks the cluster for Metadata of no topic: "" when nothing
// answers, else what the answer says about the controller.
func whyNoAnswer(ctx context.Context, cl *kgo.Client) string {
	ctx, cancel := context.WithTimeout(ctx, whyNoAnswerTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return ""
	}
	if resp.ControllerID < 0 {
		return "the cluster has no controller now (a majority of controller.quorum.voters must be up and reachable; wren cluster health says which nodes are down)"
	}
	return fmt.Sprintf("the controller (node %d) did not complete it in time", resp.ControllerID)
}

// topicIDString renders a topic id as Kafka's Uuid.toString does: URL-safe
// base64 without padding (kadm's String uses standard base64 with padding).
func topicIDString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// requireTopics fails fast with ErrUnknownTopic when a topic does not
// exist. kgo never asks the broker to auto-create a topic, and would
// otherwise retry a missing topic for a minute (produce) or wait forever
// (consume) without a word.
func requireTopics(c *ucli.Context, cl *kgo.Client, topics ...string) error {
	ctx, cancel := withTimeout(c)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topics...)
	if err != nil {
		return noAnswer(c, cl, fmt.Errorf("cli: metadata: %w", err))
	}
	for _, t := range topics {
		td, ok := md.Topics[t]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("%w: %s", ErrUnknownTopic, t)
		case td.Err != nil:
			return fmt.Errorf("cli: topic %s: %w", t, td.Err)
		}
	}
	return nil
}

// requirePartition fails unless topic has partition: kgo would otherwise
// wait for it silently (consume -p 7 on a topic of five partitions).
func requirePartition(c *ucli.Context, cl *kgo.Client, topic string, partition int32) error {
	ctx, cancel := withTimeout(c)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return noAnswer(c, cl, fmt.Errorf("cli: metadata: %w", err))
	}
	n := int32(len(md.Topics[topic].Partitions))
	if partition >= n {
		return fmt.Errorf("%w: --partition %d: topic %s has %d partitions (0 to %d)", ErrUsage, partition, topic, n, n-1)
	}
	return nil
}
