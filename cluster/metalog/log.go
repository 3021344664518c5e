package metalog

import "fmt"

// memLog is the node's view of its log: the snapshot and the entries after
// it, durable or not.
//
// Invariant: ents[i].Index == snap.Index+1+i, and epochs never decrease
// along snap, ents.
type memLog struct {
	snap Snapshot
	ents []Entry
	// checked counts the leading entries that the node's checkInvariants
	// has found in order, each after the one before it. Entries change
	// only through the methods below, at the ends: append adds unchecked
	// ones, and truncateAfter and compact lower checked by what they drop,
	// so a check walks only the entries appended since the last one (and
	// the first against the snapshot), not the whole log after every input.
	checked int
}

func (l *memLog) lastIndex() int64 { return l.snap.Index + int64(len(l.ents)) }

func (l *memLog) lastEpoch() int32 {
	if len(l.ents) == 0 {
		return l.snap.Epoch
	}
	return l.ents[len(l.ents)-1].Epoch
}

// epochAt returns the epoch of entry i, if the log still knows it (the
// snapshot's own index counts).
func (l *memLog) epochAt(i int64) (int32, bool) {
	switch {
	case i == l.snap.Index:
		return l.snap.Epoch, true
	case i < l.snap.Index || i > l.lastIndex():
		return 0, false
	}
	return l.ents[i-l.snap.Index-1].Epoch, true
}

func (l *memLog) mustEpochAt(i int64) int32 {
	ep, ok := l.epochAt(i)
	if !ok {
		panic(fmt.Sprintf("metalog: entry %d not in log [%d, %d]", i, l.snap.Index, l.lastIndex()))
	}
	return ep
}

// slice returns entries (from, to], copied so the caller may keep them.
func (l *memLog) slice(from, to int64) []Entry {
	if from < l.snap.Index || to > l.lastIndex() || from > to {
		panic(fmt.Sprintf("metalog: slice (%d, %d] outside log [%d, %d]", from, to, l.snap.Index, l.lastIndex()))
	}
	out := make([]Entry, to-from)
	copy(out, l.ents[from-l.snap.Index:to-l.snap.Index])
	return out
}

func (l *memLog) append(e Entry) {
	if e.Index != l.lastIndex()+1 || e.Epoch < l.lastEpoch() {
		panic(fmt.Sprintf("metalog: append %v after %d/%d", e, l.lastEpoch(), l.lastIndex()))
	}
	l.ents = append(l.ents, e)
}

// truncateAfter drops the entries after i.
func (l *memLog) truncateAfter(i int64) {
	if i < l.snap.Index {
		panic(fmt.Sprintf("metalog: truncate after %d, below the snapshot %d", i, l.snap.Index))
	}
	if i < l.lastIndex() {
		l.ents = l.ents[: i-l.snap.Index : i-l.snap.Index]
		l.checked = min(l.checked, len(l.ents))
	}
}

// compact makes s the snapshot. With keep, the entries after s.Index stay
// (the log holds s.Index with s.Epoch, so they continue it); otherwise the
// log is just s.
func (l *memLog) compact(s Snapshot, keep bool) {
	if keep {
		drop := int(s.Index - l.snap.Index)
		l.ents = append([]Entry(nil), l.ents[drop:]...)
		l.checked = max(l.checked-drop, 0)
	} else {
		l.ents = nil
		l.checked = 0
	}
	l.snap = s
}
