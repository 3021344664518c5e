package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wren-broker/wren/config"
)

// recorded lists, in order, what fake components did.
type recorded struct{ events []string }

func (r *recorded) component(name string, startErr, closeErr error) component {
	return component{
		name: name,
		start: func() error {
			r.events = append(r.events, "start "+name)
			return startErr
		},
		close: func() error {
			r.events = append(r.events, "close "+name)
			return closeErr
		},
	}
}

func TestComponentsFailedStartClosesEarlierInReverse(t *testing.T) {
	boom := errors.New("broker: boom")
	for failing := range 4 {
		var r recorded
		var list []component
		for i, name := range []string{"a", "b", "c", "d"} {
			var err error
			if i == failing {
				err = boom
			}
			list = append(list, r.component(name, err, nil))
		}
		cs := components{list: list, logger: testLogger(t)}
		err := cs.start()
		var se *startError
		if !errors.As(err, &se) || se.component != list[failing].name || !errors.Is(err, boom) {
			t.Fatalf("component %d failing: error %v does not name %s and wrap the cause", failing, err, list[failing].name)
		}
		if want := "broker: " + list[failing].name + ": boom"; err.Error() != want {
			t.Fatalf("component %d failing: error %q, want %q", failing, err, want)
		}
		var want []string
		for _, c := range list[:failing+1] {
			want = append(want, "start "+c.name)
		}
		for i := failing - 1; i >= 0; i-- {
			want = append(want, "close "+list[i].name)
		}
		if !slices.Equal(r.events, want) {
			t.Fatalf("component %d failing:\n got  %v\n want %v", failing, r.events, want)
		}
		if err := cs.close(); err != nil || len(r.events) != len(want) {
			t.Fatalf("close after a failed start closed again: %v, %v", err, r.events)
		}
	}
}

func TestComponentsCloseInReverseOnce(t *testing.T) {
	var r recorded
	errB, errD := errors.New("b did not close"), errors.New("d did not close")
	noClose := component{name: "c", start: func() error { r.events = append(r.events, "start c"); return nil }}
	cs := components{list: []component{
		r.component("a", nil, nil), r.component("b", nil, errB), noClose, r.component("d", nil, errD),
	}, logger: testLogger(t)}
	if err := cs.start(); err != nil {
		t.Fatal(err)
	}
	err := cs.close()
	// Every component closes even after one failed to, and the error
	// carries each failure.
	if !errors.Is(err, errB) || !errors.Is(err, errD) {
		t.Fatalf("close error %v does not carry both close errors", err)
	}
	want := []string{"start a", "start b", "start c", "start d", "close d", "close b", "close a"}
	if !slices.Equal(r.events, want) {
		t.Fatalf("\n got  %v\n want %v", r.events, want)
	}
	if err := cs.close(); err != nil || len(r.events) != len(want) {
		t.Fatalf("second close: %v, %v", err, r.events)
	}
}

// TestBackgroundComponentStopsItsGoroutine: close returns only once the
// goroutine did, so nothing it uses closes under it.
func TestBackgroundComponentStopsItsGoroutine(t *testing.T) {
	running, returned := make(chan struct{}), false
	c := background("worker", func(ctx context.Context) {
		close(running)
		<-ctx.Done()
		returned = true
	})
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	<-running
	if err := c.close(); err != nil || !returned {
		t.Fatalf("close returned %v before the goroutine did (returned %v)", err, returned)
	}
}

// componentLog records the broker's component log lines.
type componentLog struct {
	mu     sync.Mutex
	events []string
}

func (l *componentLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *componentLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *componentLog) WithGroup(string) slog.Handler            { return l }

func (l *componentLog) Handle(_ context.Context, r slog.Record) error {
	verb, ok := map[string]string{"component started": "start", "component closed": "close", "component failed to start": "fail"}[r.Message]
	if !ok {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "component" {
			l.mu.Lock()
			l.events = append(l.events, verb+" "+a.Value.String())
			l.mu.Unlock()
			return false
		}
		return true
	})
	return nil
}

func (l *componentLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.events
	l.events = nil
	return e
}

func reversed(events []string, from, to string) []string {
	var out []string
	for i := len(events) - 1; i >= 0; i-- {
		if name, ok := strings.CutPrefix(events[i], from+" "); ok {
			out = append(out, to+" "+name)
		}
	}
	return out
}

// componentConfigs are a one-voter node and a member of a three-voter
// quorum whose peers are down: Start does not wait for the quorum.
func componentConfigs(t *testing.T) map[string]*config.Config {
	quorum, err := config.Parse("node1.toml", []byte(quorumConfigText(1, t.TempDir(), freePorts(t, 3))))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*config.Config{"one voter": testConfig(t, t.TempDir(), ""), "quorum": quorum}
}

// TestBrokerClosesComponentsInReverse: a real broker starts its parts in
// the documented order (doc.go) and closes them in the reverse one.
func TestBrokerClosesComponentsInReverse(t *testing.T) {
	for name, cfg := range componentConfigs(t) {
		t.Run(name, func(t *testing.T) {
			cfg.LogScrubberEnable = true
			var l componentLog
			b, err := Start(cfg, Options{Logger: slog.New(&l)})
			if err != nil {
				t.Fatal(err)
			}
			started := l.take()
			want := []string{"start ops", "start log dir", "start controller", "start replicas", "start offsets topic",
				"start group coordinator", "start transaction coordinator", "start kafka listener", "start uplinks", "start disk space watcher", "start scrubber", "start ready"}
			if name == "quorum" {
				want = slices.Insert(want, 2, "start controller listener")
			}
			if !slices.Equal(started, want) {
				t.Fatalf("start order\n got  %v\n want %v", started, want)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if closed := l.take(); !slices.Equal(closed, reversed(started, "start", "close")) {
				t.Fatalf("close order %v is not the reverse of the start order %v", closed, started)
			}
		})
	}
}

// TestBrokerFailedStartClosesEarlierComponents: a client listener address
// that is taken fails the kafka listener; the error names it, and every
// component started before it is closed in reverse, so the data directory
// and the CONTROLLER listener are free for the next start.
func TestBrokerFailedStartClosesEarlierComponents(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for name, cfg := range componentConfigs(t) {
		t.Run(name, func(t *testing.T) {
			for i, ln := range cfg.Listeners {
				if ln.Name == "PLAINTEXT" {
					cfg.Listeners[i].Port = taken.Addr().(*net.TCPAddr).Port
				}
			}
			var l componentLog
			b, err := Start(cfg, Options{Logger: slog.New(&l)})
			if err == nil {
				b.Close()
				t.Fatalf("Start on a taken client listener address %s succeeded", taken.Addr())
			}
			var se *startError
			if !errors.As(err, &se) || se.component != "kafka listener" || !strings.HasPrefix(err.Error(), "broker: kafka listener: listen tcp ") {
				t.Fatalf("error does not name the kafka listener: %v", err)
			}
			events := l.take()
			failed := slices.Index(events, "fail kafka listener")
			if failed < 0 {
				t.Fatalf("no failure logged for the kafka listener: %v", events)
			}
			if got, want := events[failed+1:], reversed(events[:failed], "start", "close"); !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("after the failure closed %v, want the reverse of the started %v", got, events[:failed])
			}
			// The log dir's lock and the CONTROLLER listener were released
			// with them: the same node starts.
			for i, ln := range cfg.Listeners {
				if ln.Name == "PLAINTEXT" {
					cfg.Listeners[i].Port = 0
				}
			}
			startBroker(t, cfg)
		})
	}
}
