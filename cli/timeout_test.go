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

// TestProduceTimeoutBoundsCommand: a broker that holds InitProducerId for
// 5 s and then answers REQUEST_TIMED_OUT (a broker whose controller was
// just killed, as wren's did) must not keep `produce --timeout 1s`
// running past its timeout: the metadata check and the delivery share
// the one second, and the command fails saying so.
func TestProduceTimeoutBoundsCommand(t *testing.T) {
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
	topic := uniqueTopic(t)
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
	start := time.Now()
	r := run(t, "one\ntwo\n", "produce", topic, "--timeout", "1s", "-b", b)
	took := time.Since(start)
	if r.code == 0 {
		t.Fatalf("produce exited 0 with no producer id to be had; stderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "within --timeout 1s for 2 records") {
		t.Errorf("stderr does not name the timeout and the records:\n%s", r.stderr)
	}
	// One second and a margin for a loaded machine; the broker held the
	// producer id for five.
	if took > 3*time.Second {
		t.Fatalf("produce --timeout 1s ran %v", took)
	}
	t.Logf("produce --timeout 1s ended after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
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
