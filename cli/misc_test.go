package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestInterspersed(t *testing.T) {
	app := App(Env{})
	for _, tc := range []struct{ in, want string }{
		{"wren topic create T -p 3 -r 1", "wren topic create -p 3 -r 1 T"},
		{"wren topic create T --if-not-exists -c a=b U", "wren topic create --if-not-exists -c a=b T U"},
		{"wren topic create -p 3 T", "wren topic create -p 3 T"},
		{"wren topic create T --partitions=3", "wren topic create --partitions=3 T"},
		// Flag values that look like flags stay with their flag.
		{"wren offsets T --time -1", "wren offsets --time -1 T"},
		{"wren consume T -o -5 -n 1", "wren consume -o -5 -n 1 T"},
		// A positional starting with '-' keeps a "--" in front of it.
		{"wren produce T -- -odd", "wren produce -- T -odd"},
		{"wren dump-log a.log --deep-iteration b.log", "wren dump-log --deep-iteration a.log b.log"},
		// Unknown words and flags are left for urfave to reject.
		{"wren nosuch -x 1", "wren -x nosuch 1"},
		{"wren help topic", "wren help topic"},
	} {
		got := strings.Join(Interspersed(app, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("Interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The histogram against exact quantiles of the same sample, chosen as
// Kafka's perf test chooses (sorted[floor(q*n)]): never below, never more
// than one bucket width (1/64) above.
func TestHistogramQuantiles(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := 0; round < 20; round++ {
		n := 1 + rng.IntN(5000)
		var h histogram
		sample := make([]uint64, n)
		for i := range sample {
			// Latencies from 0 to about 10 s in µs, log-uniform.
			sample[i] = uint64(rng.Float64() * float64(uint64(1)<<rng.IntN(34)))
			h.record(sample[i])
		}
		slices.Sort(sample)
		for _, q := range []float64{0, 0.5, 0.95, 0.99, 0.999, 1} {
			idx := min(int(q*float64(n)), n-1)
			exact, got := sample[idx], h.quantile(q)
			if got < exact || float64(got-exact) > float64(exact)/64+1 {
				t.Fatalf("seed %d round %d n %d: quantile %v = %d, exact %d", seed, round, n, q, got, exact)
			}
		}
		if h.max != sample[n-1] {
			t.Fatalf("seed %d: max %d, want %d", seed, h.max, sample[n-1])
		}
	}
}

// Buckets tile the uint64 range: each value falls in the bucket whose
// range holds it, and consecutive buckets meet.
func TestHistogramBuckets(t *testing.T) {
	var next uint64
	for i := 0; i < histBuckets; i++ {
		lo, hi := bucketRange(i)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d is [%d, %d], want it to start at %d", i, lo, hi, next)
		}
		for _, v := range []uint64{lo, hi, lo + (hi-lo)/2} {
			if b := bucketOf(v); b != i {
				t.Fatalf("bucketOf(%d) = %d, want %d", v, b, i)
			}
		}
		next = hi + 1
	}
	if next != 0 { // wrapped: the last bucket ends at MaxUint64
		t.Fatalf("buckets end at %d, want 2^64-1", next-1)
	}
}

func TestServe(t *testing.T) {
	r := mustFail(t, "", "serve")
	if r.stderr != "wren: serve is not built into this binary yet\n" {
		t.Errorf("serve without a hook: stderr %q", r.stderr)
	}
	var gotPath string
	var gotCtx context.Context
	env := Env{Serve: func(ctx context.Context, o ServeOptions) error {
		gotPath, gotCtx = o.ConfigPath, ctx
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if code := Main(ctx, env, []string{"wren", "serve", "--config", "wren.toml"}); code != 0 {
		t.Fatalf("serve with a hook: exit %d", code)
	}
	if gotPath != "wren.toml" || gotCtx == nil {
		t.Fatalf("hook got path %q ctx %v", gotPath, gotCtx)
	}
	// The hook's context is the one Main got: cancelling it (SIGINT in
	// main.go) reaches the broker.
	cancel()
	select {
	case <-gotCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling Main's context did not reach the serve hook")
	}
	fail := Env{Serve: func(context.Context, ServeOptions) error { return errors.New("boom") }}
	var stderr strings.Builder
	fail.Stderr = &stderr
	if code := Main(context.Background(), fail, []string{"wren", "serve"}); code != 1 || stderr.String() != "wren: boom\n" {
		t.Errorf("failing hook: exit %d, stderr %q", code, stderr.String())
	}
}

func TestVersion(t *testing.T) {
	out := mustRun(t, "", "version").stdout
	want := fmt.Sprintf("Version:    dev\nCommit:     %s\nGo version: %s\nOS/Arch:    %s/%s\n",
		currentVersion().Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if out != want {
		t.Errorf("version printed %q, want %q", out, want)
	}
	var v versionInfo
	decodeJSON(t, mustRun(t, "", "version", "--format", "json").stdout, &v)
	if !reflect.DeepEqual(v, currentVersion()) {
		t.Errorf("version --format json: %+v", v)
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	mustFail(t, "", "nosuch")
	mustFail(t, "", "topic", "list", "--nosuch")
	if out := mustRun(t, "", "--help").stdout; !strings.Contains(out, "dump-log") {
		t.Errorf("--help does not list dump-log:\n%s", out)
	}
}

// A client command against a port nothing listens on fails within
// --timeout instead of hanging.
func TestNoBrokerTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a timeout")
	}
	start := time.Now()
	r := mustFail(t, "", "topic", "list", "-b", "127.0.0.1:1", "--timeout", "500ms")
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	if r.stderr == "" {
		t.Error("no error message")
	}
}

// TestServeLogLevel: --log-level, else WREN_LOG_LEVEL, reaches the serve
// hook; a level slog does not know is refused before serving.
func TestServeLogLevel(t *testing.T) {
	var got ServeOptions
	env := Env{Serve: func(_ context.Context, o ServeOptions) error {
		got = o
		return nil
	}}
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, ""},
		{"", []string{"--log-level", "debug"}, "debug"},
		{"warn", nil, "warn"},
		{"warn", []string{"--log-level", "error"}, "error"},
	} {
		t.Setenv("WREN_LOG_LEVEL", tc.env)
		got = ServeOptions{LogLevel: "unset"}
		if code := Main(context.Background(), env, append([]string{"wren", "serve"}, tc.args...)); code != 0 {
			t.Fatalf("WREN_LOG_LEVEL=%q %v: exit %d", tc.env, tc.args, code)
		}
		if got.LogLevel != tc.want {
			t.Errorf("WREN_LOG_LEVEL=%q %v: log level %q, want %q", tc.env, tc.args, got.LogLevel, tc.want)
		}
	}
	t.Setenv("WREN_LOG_LEVEL", "")
	var stderr strings.Builder
	env.Stderr = &stderr
	got = ServeOptions{LogLevel: "unset"}
	if code := Main(context.Background(), env, []string{"wren", "serve", "--log-level", "verbose"}); code == 0 || got.LogLevel != "unset" {
		t.Fatalf("--log-level verbose: exit %d, served with %+v", code, got)
	}
	if !strings.Contains(stderr.String(), "--log-level") || !strings.Contains(stderr.String(), `"verbose"`) {
		t.Fatalf("--log-level verbose: stderr %q does not name the flag and value", stderr.String())
	}
}
