package txn

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wren-broker/wren/internal/datadriven"
)

func TestDataDriven(t *testing.T) {
	datadriven.RunDir(t, filepath.Join("testdata"), func(t *testing.T) func(*datadriven.Cmd) string {
		e := newEnv(t)
		return e.handle
	})
}

// env drives one coordinator of partition 0 of a one-partition topic, with
// its log as the encoded records.
type env struct {
	t       *testing.T
	c       *Coordinator
	cfg     Config
	now     int64
	reqID   uint64
	nextPID int64
	log     [][2][]byte
	pending []Markers
}

func newEnv(t *testing.T) *env {
	cfg := DefaultConfig()
	cfg.MaxTimeoutMs = 60000
	cfg.IDExpirationMs = 100000
	c, err := NewCoordinator(cfg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.CompleteLoad()
	return &env{t: t, c: c, cfg: cfg, nextPID: 1000}
}

func parseParts(t testing.TB, s string) []TopicPartition {
	var out []TopicPartition
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		topic, p, _ := strings.Cut(f, "/")
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("partition %q: %v", f, err)
		}
		out = append(out, TopicPartition{Topic: topic, Partition: int32(n)})
	}
	return out
}

func (e *env) handle(d *datadriven.Cmd) string {
	t := e.t
	if d.Has("now") {
		e.now = d.Int64(t, "now", 0)
	}
	e.reqID++
	id := d.Str("id", "tx")
	switch d.Name {
	case "init":
		fresh := e.nextPID
		e.nextPID++
		e.c.InitProducerID(InitRequest{RequestID: e.reqID, TransactionalID: id, TimeoutMs: int32(d.Int(t, "timeout", 10000)),
			ExpectedProducerID: d.Int64(t, "pid", -1), ExpectedEpoch: int16(d.Int(t, "epoch", -1)), FreshProducerID: fresh}, e.now)
	case "add":
		e.c.AddPartitions(AddPartitionsRequest{RequestID: e.reqID, TransactionalID: id, ProducerID: d.Int64(t, "pid", 0),
			ProducerEpoch: int16(d.Int(t, "epoch", 0)), Partitions: parseParts(t, d.Str("parts", "")), VerifyOnly: slices.Contains(d.Args, "verify")}, e.now)
	case "end":
		e.c.EndTxn(EndRequest{RequestID: e.reqID, TransactionalID: id, ProducerID: d.Int64(t, "pid", 0),
			ProducerEpoch: int16(d.Int(t, "epoch", 0)), Commit: slices.Contains(d.Args, "commit")}, e.now)
	case "markers":
		// Completes the oldest pending markers.
		if len(e.pending) == 0 {
			return "no markers pending"
		}
		mk := e.pending[0]
		e.pending = e.pending[1:]
		e.c.MarkersWritten(mk, e.now)
	case "tick":
		e.c.Tick(e.now)
	case "reload":
		c, err := NewCoordinator(e.cfg, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range e.log {
			r, err := DecodeRecord(kv[0], kv[1])
			if err != nil {
				t.Fatalf("%s: decode: %v", d.Pos, err)
			}
			if err := c.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
		c.CompleteLoad()
		e.c, e.pending = c, nil
	case "list":
		ls, code := e.c.List()
		var b strings.Builder
		fmt.Fprintf(&b, "code=%d", code)
		for _, l := range ls {
			fmt.Fprintf(&b, " %s:%d:%v", l.TransactionalID, l.ProducerID, l.State)
		}
		return b.String()
	case "describe":
		m, code := e.c.Describe(id)
		if m == nil {
			return fmt.Sprintf("code=%d", code)
		}
		return fmtMeta(m)
	default:
		t.Fatalf("%s: unknown command %s", d.Pos, d.Name)
	}
	return e.output(d.Name)
}

func fmtMeta(m *Metadata) string {
	return fmt.Sprintf("%s pid=%d epoch=%d last=%d state=%v parts=%v start=%d upd=%d timeout=%d",
		m.TransactionalID, m.ProducerID, m.ProducerEpoch, m.LastProducerEpoch, m.State, m.Partitions, m.StartMs, m.LastUpdateMs, m.TimeoutMs)
}

func (e *env) output(name string) string {
	rd := e.c.Ready()
	var lines []string
	for _, r := range rd.Records {
		k, v := r.EncodeKey(), r.EncodeValue()
		e.log = append(e.log, [2][]byte{k, v})
		back, err := DecodeRecord(k, v)
		if err != nil {
			e.t.Fatalf("decode own record: %v", err)
		}
		if r.Metadata == nil {
			lines = append(lines, "persist tombstone "+r.TransactionalID)
			continue
		}
		m := *back.Metadata
		m.LastProducerEpoch = r.Metadata.LastProducerEpoch // not in the log
		m.PrevProducerID = r.Metadata.PrevProducerID
		lines = append(lines, "persist "+fmtMeta(&m))
	}
	for _, r := range rd.Responses {
		s := fmt.Sprintf("r%d %s: code=%d pid=%d epoch=%d", r.RequestID, name, r.ErrorCode, r.ProducerID, r.ProducerEpoch)
		if len(r.Partitions) > 0 {
			var ps []string
			for tp, code := range r.Partitions {
				ps = append(ps, fmt.Sprintf("%v:%d", tp, code))
			}
			sortStrings(ps)
			s += " " + strings.Join(ps, " ")
		}
		lines = append(lines, s)
	}
	for _, mk := range rd.Markers {
		lines = append(lines, fmt.Sprintf("markers %s pid=%d epoch=%d commit=%v parts=%v", mk.TransactionalID, mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.Partitions))
		e.pending = append(e.pending, mk)
	}
	return strings.Join(lines, "\n")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
