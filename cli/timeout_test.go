package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// heldProducerIDBroker is a kfake cluster, with topic made, that holds
// every InitProducerId for 5 s and then answers REQUEST_TIMED_OUT (a
// broker whose controller was just killed, as wren's did).
func heldProducerIDBroker(t *testing.T) (bootstrap, topic string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		c.Close()
	})
	b := strings.Join(c.ListenAddrs(), ",")
	topic = uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() {
			select {
			case <-time.After(5 * time.Second):
			case <-done:
			}
		})
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil, true
	})
	return b, topic
}

// TestProduceTimeoutBoundsCommand: a broker that holds the producer id
// must not keep `produce --timeout 1s` (or `perf produce`) running past
// its timeout: the metadata check and the delivery share the one second,
// and the command fails saying so.
func TestProduceTimeoutBoundsCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"produce", "one\ntwo\n", []string{"produce", "TOPIC"}, "within --timeout 1s for 2 records"},
		{"perf produce", "", []string{"perf", "produce", "--topic", "TOPIC", "--num-records", "5"}, "within --timeout 1s; 5 of 5 records not acknowledged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, topic := heldProducerIDBroker(t)
			args := append([]string{}, tc.args...)
			for i, a := range args {
				if a == "TOPIC" {
					args[i] = topic
				}
			}
			start := time.Now()
			r := run(t, tc.stdin, append(args, "--timeout", "1s", "-b", b)...)
			took := time.Since(start)
			if r.code == 0 {
				t.Fatalf("exited 0 with no producer id to be had; stderr:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, r.stderr)
			}
			// One second and a margin for a loaded machine; the broker
			// held the producer id for five.
			if took > 3*time.Second {
				t.Fatalf("%s --timeout 1s ran %v", tc.name, took)
			}
			t.Logf("%s --timeout 1s ended after %v: %s", tc.name, took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
		})
	}
}

// TestWithTimeoutSharesCommandDeadline: every context withTimeout derives
// in one command ends at the same instant, --timeout after the command
// began, however late it is asked for.
func TestWithTimeoutSharesCommandDeadline(t *testing.T) {
	var deadlines []time.Time
	var started time.Time
	app := App(Env{})
	app.Commands = append(app.Commands, &ucli.Command{Name: "probe", Flags: []ucli.Flag{timeoutFlag()},
		Action: func(c *ucli.Context) error {
			started = commandStart(c.Context)
			for i := 0; i < 3; i++ {
				ctx, cancel := withTimeout(c)
				d, ok := ctx.Deadline()
				cancel()
				if !ok {
					t.Fatal("no deadline")
				}
				deadlines = append(deadlines, d)
				// Time passes between the requests of a command.
				for now := time.Now(); !time.Now().After(now); {
				}
			}
			return nil
		}})
	if err := app.Run([]string{"wren", "probe", "--timeout", "2s"}); err != nil {
		t.Fatal(err)
	}
	for i, d := range deadlines {
		if !d.Equal(started.Add(2 * time.Second)) {
			t.Errorf("request %d's deadline %v, want the command's start + 2s = %v", i+1, d, started.Add(2*time.Second))
		}
	}
}

// TestProduceIdleInputDoesNotTimeOut: --timeout counts while records wait
// for their acknowledgement, not while the command waits for input with
// everything acknowledged: a producer fed by hand outlives it.
func TestProduceIdleInputDoesNotTimeOut(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	in, feed := io.Pipe()
	go func() {
		feed.Write([]byte("first\n"))
		// The input pauses for longer than --timeout; not a wait for a
		// condition, the pause is the point.
		time.Sleep(3 * time.Second)
		feed.Write([]byte("second\n"))
		feed.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, Env{Stdin: in, Stdout: &out, Stderr: &errOut}, []string{"wren", "produce", topic, "--timeout", "2s", "-b", b})
	if code != 0 || !strings.HasPrefix(errOut.String(), "Produced 2 records") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
}
