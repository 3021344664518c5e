package kafka

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/wren-broker/wren/internal/membudget"
)

// Fair shares of what clients compete for: the request budget and the
// connection slots. Without them the bounds that protect the broker's
// memory become the way to stop it: a client that announces a large frame
// and trickles its body holds the budget every other client waits for,
// and a few addresses opening idle connections hold every slot.
const (
	// budgetWatchInterval is how often the budget watch looks at the
	// budgets and at the frames holding them.
	budgetWatchInterval = 100 * time.Millisecond
	// slowFrameGrace and slowFrameHold: while other requests wait for
	// the budget a frame holds, a frame that has held it for
	// slowFrameGrace and at its average rate so far would hold it for
	// more than slowFrameHold in all is closed (ErrFrameTooSlow). A
	// client on a fast link sends an 8 MiB frame in well under a
	// second; one that cannot send it within slowFrameHold keeps every
	// other large request waiting that long, and is refused only while
	// they wait. Uncontended, a frame has FrameTimeout.
	slowFrameGrace = time.Second
	// budgetWarnWait: a request waiting this long for the budget is
	// warned about (one line in ten seconds at most).
	budgetWarnWait = time.Second
	slowFrameHold  = 5 * time.Second
	// slowFrameGraceRepeat replaces slowFrameGrace for an address that had
	// a frame closed as too slow within slowFrameMemory: a client that
	// reconnects and trickles again would otherwise take the budget back
	// for a full grace each time. slowFrameMemoryMax bounds the addresses
	// remembered.
	slowFrameGraceRepeat = 200 * time.Millisecond
	slowFrameMemory      = time.Minute
	slowFrameMemoryMax   = 4096
	// reservedSlotsDivisor: a 1/8 of MaxConnections is kept for addresses
	// with fewer than fewConnections open, so a new client is served
	// whatever the others hold.
	reservedSlotsDivisor = 8
	fewConnections       = 4
	// evictIdleUnworked and evictIdleWorked: near MaxConnections a new
	// connection closes the idlest connection of the largest address,
	// one that has sent nothing but ApiVersions and was idle for
	// evictIdleUnworked first, else one idle for evictIdleWorked.
	evictIdleUnworked = time.Second
	evictIdleWorked   = 30 * time.Second
)

// needsSlotLocked reports whether a connection from ip may only be
// accepted if an idle one is closed: the Server is at MaxConnections, or
// in the slots kept for addresses with few connections and ip is not one.
func (s *Server) needsSlotLocked(ip netip.Addr, hasIP bool) bool {
	open := len(s.conns) - s.evicting
	if open >= s.limits.Max {
		return true
	}
	reserved := s.limits.Max / reservedSlotsDivisor
	few := !hasIP || s.perIP[ip] < fewConnections
	return open >= s.limits.Max-reserved && !few
}

// pickVictimLocked chooses the connection to close for a new one from ip,
// or nil. Only idle connections qualify: nothing in flight, and either
// sent nothing but ApiVersions and silent for evictIdleUnworked, or idle
// (no frame started) for evictIdleWorked. Of those it takes, in order:
// one that never worked, from the address with the most connections, idle
// longest. A newcomer from an address with many connections only displaces
// connections of addresses with at least two more, so a flood from one address cannot
// push out its smaller neighbours, and addresses flooding alike do not
// churn each other's connections.
func (s *Server) pickVictimLocked(ip netip.Addr, hasIP bool, now time.Time) *conn {
	floor := 0
	if hasIP && s.perIP[ip] >= fewConnections {
		// After the swap the victim's address must still hold at least
		// as many as the newcomer's: two addresses one apart would
		// otherwise take slots from each other for ever.
		floor = s.perIP[ip] + 2
	}
	var best *conn
	var bestUnworked bool
	var bestCount int
	var bestIdle time.Duration
	for c := range s.conns {
		if c.evicted || c.inflight.Load() > 0 {
			continue
		}
		count := 0
		if c.hasIP {
			count = s.perIP[c.ip]
		}
		if count < floor {
			continue
		}
		idle := now.Sub(time.Unix(0, c.lastActive.Load()))
		unworked := !c.worked.Load()
		switch {
		case unworked && idle >= evictIdleUnworked:
		case !c.progress.InFrame.Load() && idle >= evictIdleWorked:
		default:
			continue
		}
		better := best == nil ||
			unworked && !bestUnworked ||
			unworked == bestUnworked && (count > bestCount || count == bestCount && idle > bestIdle)
		if better {
			best, bestUnworked, bestCount, bestIdle = c, unworked, count, idle
		}
	}
	return best
}

// watchBudgets runs until Close: every budgetWatchInterval it closes the
// frames that hold the request budget too slowly while others wait, and
// warns (at a bounded rate) when a request has waited budgetWarnWait.
func (s *Server) watchBudgets() {
	defer s.wg.Done()
	t := time.NewTicker(budgetWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.checkBudgets(now)
		}
	}
}

func (s *Server) checkBudgets(now time.Time) {
	big, small, reqs := s.requestBytes.Stats(), s.smallRequestBytes.Stats(), s.requests.Stats()
	if big.Waiting+small.Waiting+reqs.Waiting == 0 {
		return
	}
	for _, c := range s.slowFrames(now, big.Waiting > 0, small.Waiting > 0, reqs.Waiting > 0) {
		s.preempted.Add(1)
		if c.hasIP {
			s.mu.Lock()
			if len(s.slowAddrs) < slowFrameMemoryMax {
				s.slowAddrs[c.ip] = now
			}
			s.mu.Unlock()
		}
		c.close(fmt.Errorf("%w: %d of %d bytes in %v", ErrFrameTooSlow,
			c.progress.Got.Load(), c.progress.Size.Load(), now.Sub(time.Unix(0, c.progress.BodyStart.Load())).Round(time.Millisecond)))
	}
	// A brief queue under load is the budget working; a wait of a
	// second or more is worth a line.
	if oldest := max(big.OldestWait, small.OldestWait, reqs.OldestWait); oldest < budgetWarnWait {
		return
	}
	if ok, suppressed := s.budgetLog.allow(); ok {
		s.log.Warn("requests waiting for the request budget (queued.max.request.bytes, queued.max.requests)",
			"waiting_large", big.Waiting, "waiting_small", small.Waiting, "waiting_requests", reqs.Waiting,
			"oldest_wait", max(big.OldestWait, small.OldestWait, reqs.OldestWait).Round(time.Millisecond),
			"bytes_in_use", big.InUse, "bytes_capacity", big.Capacity,
			"small_bytes_in_use", small.InUse, "small_bytes_capacity", small.Capacity,
			"suppressed", suppressed)
	}
}

// slowFrames are the connections reading a frame body that holds a budget
// others wait for, too slowly: held for slowFrameGrace (or
// slowFrameGraceRepeat, for an address that had a frame closed as too
// slow lately), and at its average rate so far it would hold it longer
// than slowFrameHold.
func (s *Server) slowFrames(now time.Time, bigWaiting, smallWaiting, requestsWaiting bool) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, at := range s.slowAddrs {
		if now.Sub(at) >= slowFrameMemory {
			delete(s.slowAddrs, a)
		}
	}
	var slow []*conn
	for c := range s.conns {
		start := c.progress.BodyStart.Load()
		if start == 0 {
			continue
		}
		size, got := c.progress.Size.Load(), c.progress.Got.Load()
		if got >= size {
			continue // read whole: being handled
		}
		contended := requestsWaiting || bigWaiting && size > smallFrameBytes || smallWaiting && size <= smallFrameBytes
		held := now.Sub(time.Unix(0, start))
		grace := slowFrameGrace
		if _, ok := s.slowAddrs[c.ip]; ok && c.hasIP {
			grace = slowFrameGraceRepeat
		}
		if !contended || held < grace {
			continue
		}
		// projected = held * size / got, without overflow for sizes up
		// to 2 GiB and holds up to hours.
		if got == 0 || float64(held)*float64(size)/float64(got) > float64(slowFrameHold) {
			slow = append(slow, c)
		}
	}
	return slow
}

// BudgetStats is the state of a Server's request budgets and connection
// slots, for metrics and health.
type BudgetStats struct {
	// Waiting is the number of requests waiting now for the request
	// budgets (bytes, small-request bytes, requests); Waited counts the
	// requests that ever had to wait.
	Waiting int
	Waited  uint64
	// OldestWait is how long the first waiting request has waited.
	OldestWait time.Duration
	// Starved: requests have waited and a budget granted nothing for
	// ServerConfig.BudgetStarvedAfter: the broker is not serving the
	// clients that wait.
	Starved bool
	// Preempted counts frames closed for holding the budget too slowly
	// while others waited (ErrFrameTooSlow); FrameDeadlines frames not
	// read whole within FrameTimeout (ErrFrameDeadline); Evicted idle
	// connections closed to make room for new ones.
	Preempted, FrameDeadlines, Evicted uint64
}

// BudgetStats returns the state of the request budgets and slots now.
func (s *Server) BudgetStats() BudgetStats {
	st := BudgetStats{
		Preempted:      s.preempted.Load(),
		FrameDeadlines: s.frameDeadlines.Load(),
		Evicted:        s.evicted.Load(),
	}
	for _, b := range []*membudget.Budget{s.requestBytes, s.smallRequestBytes, s.requests} {
		x := b.Stats()
		st.Waiting += x.Waiting
		st.Waited += x.Waited
		st.OldestWait = max(st.OldestWait, x.OldestWait)
		if after := s.cfg.BudgetStarvedAfter; x.Waiting > 0 && x.OldestWait >= after && x.SinceGrant >= after {
			st.Starved = true
		}
	}
	return st
}
