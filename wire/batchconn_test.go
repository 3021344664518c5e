package wire

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
)

// lockedRecordingConn records writes like recordingConn, safe for the
// concurrent writers a BatchConn may have.
type lockedRecordingConn struct {
	net.Conn
	mu     sync.Mutex
	buf    bytes.Buffer
	writes []int
	fail   error
}

func (c *lockedRecordingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, len(b))
	return c.buf.Write(b)
}

// Outside a batch every write goes straight through; in one, writes are
// gathered into writes of at most batchBytes, the same bytes in the same
// order, and Flush sends the rest and ends the batch.
func TestBatchConnGathersWrites(t *testing.T) {
	var under lockedRecordingConn
	c := NewBatchConn(&under)
	var want []byte
	write := func(b []byte) {
		t.Helper()
		if n, err := c.Write(b); n != len(b) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(b), n, err)
		}
		want = append(want, b...)
	}
	write([]byte("hello"))
	if len(under.writes) != 1 {
		t.Fatalf("a write outside a batch was not passed through: %v", under.writes)
	}
	c.Batch()
	for i := range 100 {
		write(bytes.Repeat([]byte{byte(i)}, 16<<10+22)) // a full TLS 1.3 record
	}
	// Every gathered write but the last holds eight whole records.
	const rec = 16<<10 + 22
	gathered := under.writes[1:]
	if len(gathered) != 100/8 {
		t.Fatalf("%d writes under the batch, want %d: %v", len(gathered), 100/8, gathered)
	}
	for i, w := range gathered {
		if w != 8*rec {
			t.Fatalf("write %d of %d bytes, want %d (eight records)", i, w, 8*rec)
		}
	}
	write(make([]byte, batchBytes+1)) // larger than a batch: written as is
	mustNotErr(t, c.Flush())
	n := len(under.writes)
	write([]byte("after"))
	if len(under.writes) != n+1 {
		t.Fatal("a write after Flush was not passed through")
	}
	mustNotErr(t, c.Flush()) // nothing to flush outside a batch
	if !bytes.Equal(under.buf.Bytes(), want) {
		t.Fatal("bytes differ from what was written")
	}
}

// Two goroutines writing during a batch (the writer's records and the
// reader's KeyUpdate) each get their writes out whole and in their order.
func TestBatchConnConcurrentWriters(t *testing.T) {
	var under lockedRecordingConn
	c := NewBatchConn(&under)
	c.Batch()
	const per = 200
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				rec := bytes.Repeat([]byte{byte('a' + g)}, 1000+i)
				if _, err := c.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mustNotErr(t, c.Flush())
	// Split the stream back into runs: each goroutine's writes are runs
	// of its byte whose lengths must come in its order.
	next := [2]int{}
	b := under.buf.Bytes()
	for len(b) > 0 {
		g := int(b[0] - 'a')
		l := 1000 + next[g]
		if g < 0 || g > 1 || len(b) < l || !bytes.Equal(b[:l], bytes.Repeat(b[:1], l)) {
			t.Fatalf("a write of goroutine %d (length %d) is not whole", g, l)
		}
		next[g]++
		b = b[l:]
	}
	if next != [2]int{per, per} {
		t.Fatalf("writes seen %v, want %d each", next, per)
	}
}

// A failed write under a batch fails the batch's next Write and its Flush,
// and every write after: the connection is unusable.
func TestBatchConnWriteError(t *testing.T) {
	boom := errors.New("boom")
	under := lockedRecordingConn{fail: boom}
	c := NewBatchConn(&under)
	c.Batch()
	if _, err := c.Write(make([]byte, 1000)); err != nil {
		t.Fatalf("a gathered write failed: %v", err)
	}
	if err := c.Flush(); !errors.Is(err, boom) {
		t.Fatalf("Flush: %v, want %v", err, boom)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, boom) {
		t.Fatalf("Write after a failed flush: %v, want %v", err, boom)
	}
	c.Batch()
	if _, err := c.Write(make([]byte, batchBytes)); !errors.Is(err, boom) {
		t.Fatalf("Write in a batch after a failed flush: %v", err)
	}
}
