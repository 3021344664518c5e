package cli

import (
	"math"
	"math/bits"
)

// histogram counts non-negative values (latencies in microseconds) in
// log-linear buckets, in the manner of HdrHistogram: values below
// histSubBuckets are exact; above, each power of two is split into
// histSubBuckets/2 equal buckets, so a reported value is within 1/64
// (1.6%) of the true one, whatever the range. It is a fixed ~30 KB array:
// recording is O(1) and allocates nothing, and memory does not grow with
// the number of records (a perf run of a billion records costs the same as
// one of ten).
//
// Not safe for concurrent use; the caller locks.
type histogram struct {
	counts [histBuckets]uint64
	total  uint64
	max    uint64
}

const (
	// histSubBucketBits is the precision: 2^7 = 128 sub-buckets per
	// power of two below, 64 per power of two above.
	histSubBucketBits = 7
	histSubBuckets    = 1 << histSubBucketBits
	histHalf          = histSubBuckets / 2
	// One exact range, then a half range for each shift 1..64-7.
	histBuckets = histSubBuckets + (64-histSubBucketBits)*histHalf
)

// bucketOf maps v to its bucket index.
func bucketOf(v uint64) int {
	if v < histSubBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBucketBits // >= 1
	mantissa := v >> shift                     // in [64, 128)
	return histSubBuckets + (shift-1)*histHalf + int(mantissa-histHalf)
}

// bucketRange is the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < histSubBuckets {
		return uint64(i), uint64(i)
	}
	j := i - histSubBuckets
	shift := j/histHalf + 1
	mantissa := uint64(j%histHalf + histHalf)
	lo = mantissa << shift
	return lo, lo + (uint64(1) << shift) - 1
}

func (h *histogram) record(v uint64) {
	h.counts[bucketOf(v)]++
	h.total++
	h.max = max(h.max, v)
}

// quantile returns the value at quantile q (0..1), chosen as Kafka's
// perf-test chooses from its sorted sample: the element at index
// floor(q*count). It reports the bucket's highest value (capped at the
// largest recorded), as HdrHistogram's valueAtPercentile does, so a
// quantile is never understated.
func (h *histogram) quantile(q float64) uint64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Floor(q * float64(h.total)))
	if rank >= h.total {
		rank = h.total - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			_, hi := bucketRange(i)
			return min(hi, h.max)
		}
	}
	return h.max
}
