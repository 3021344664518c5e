package uplink

import "time"

// rateWindow is how far back a send rate looks.
const rateWindow = 10 * time.Second

// rate counts records and bytes acknowledged in one-second buckets over
// the last rateWindow, for a send rate that follows a catch-up as it
// goes (a rate since start would hide a link stalled for the last
// minute). The caller holds the link's lock.
type rate struct {
	sec            [10]int64 // the Unix second each bucket counts, 0 if unused
	records, bytes [10]int64
}

// add counts one acknowledged record of n bytes at now.
func (r *rate) add(now time.Time, n int64) {
	s := now.Unix()
	i := s % int64(len(r.sec))
	if r.sec[i] != s {
		r.sec[i], r.records[i], r.bytes[i] = s, 0, 0
	}
	r.records[i]++
	r.bytes[i] += n
}

// perSecond is the records and bytes per second over the buckets of the
// last rateWindow before now (the current second counts as a whole one).
func (r *rate) perSecond(now time.Time) (records, bytes float64) {
	s := now.Unix()
	n := int64(len(r.sec))
	for i := range r.sec {
		if r.sec[i] > s-n && r.sec[i] <= s {
			records += float64(r.records[i])
			bytes += float64(r.bytes[i])
		}
	}
	return records / float64(n), bytes / float64(n)
}
