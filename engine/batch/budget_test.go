package batch

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/wren-broker/wren/internal/membudget"
)

// TestDecompressionBudget: a batch that declares its decompressed size
// exactly holds that much of the budget and no more; the others hold at
// most twice the cap; everything is given back, whether the batch passes
// or is refused.
func TestDecompressionBudget(t *testing.T) {
	const capBytes = 4 << 20
	value := bytes.Repeat([]byte("wren edge broker record "), 10000) // 240 KB
	for _, c := range compressedCases {
		t.Run(c.name, func(t *testing.T) {
			budget := membudget.New(64 << 20)
			b := buildBatch(t, c, []Record{{Value: value}}, nil)
			s, err := ValidateSummary(b, Limits{MaxDecompressedBytes: capBytes, Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			peak := budget.Peak()
			switch c.ct {
			case CompressionSnappy, CompressionZstd:
				if peak != int64(s.UncompressedBytes) {
					t.Errorf("held %d of the budget for %d declared bytes", peak, s.UncompressedBytes)
				}
			case CompressionGzip:
				if peak != int64(s.UncompressedBytes)+1 {
					t.Errorf("held %d of the budget for a gzip trailer of %d bytes", peak, s.UncompressedBytes)
				}
			default:
				if peak < int64(s.UncompressedBytes) || peak > 2*capBytes {
					t.Errorf("held %d of the budget for %d bytes, cap %d", peak, s.UncompressedBytes, capBytes)
				}
			}
			if budget.InUse() != 0 {
				t.Errorf("%d bytes of the budget still held after validation", budget.InUse())
			}
		})
	}
}

// TestDecompressionBudgetBombs: bombs validated concurrently under a budget
// of two caps are all refused, never hold more than the budget, and give
// it all back. A gzip bomb whose trailer lies about its size is tried
// again under the full cap, and refused there.
func TestDecompressionBudgetBombs(t *testing.T) {
	const capBytes = 1 << 20
	zeros := make([]byte, 8<<20)
	budget := membudget.New(2 * capBytes)
	lim := Limits{MaxDecompressedBytes: capBytes, Budget: budget}
	var bombs [][]byte
	for _, c := range compressedCases {
		bombs = append(bombs, buildBatch(t, c, []Record{{Value: zeros}}, nil))
	}
	lying := buildBatch(t, codecCase{name: "gzip", ct: CompressionGzip}, []Record{{Value: zeros}}, nil)
	h, _ := ParseHeader(lying)
	section := bytes.Clone(lying[RecordsOffset:])
	copy(section[len(section)-4:], []byte{0, 16, 0, 0}) // ISIZE 4096
	bombs = append(bombs, appendBatch(nil, h, section))

	var wg sync.WaitGroup
	errs := make(chan error, 8*len(bombs))
	for range 8 {
		for _, b := range bombs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := Validate(b, lim)
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("bomb validated with %v, want ErrTooLarge", err)
		}
	}
	if budget.Peak() > budget.Capacity() || budget.InUse() != 0 {
		t.Fatalf("budget peak %d (capacity %d), %d still held", budget.Peak(), budget.Capacity(), budget.InUse())
	}
}
