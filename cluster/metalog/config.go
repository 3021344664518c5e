package metalog

import (
	"fmt"

	"github.com/wren-broker/wren/election"
)

// Config is one node's settings. Durations are in ticks, the election's.
type Config struct {
	Election election.Config
	// FetchWaitTicks: the controller holds a fetch that finds nothing new
	// for up to this long, answering as soon as an entry is appended or
	// the commit index moves (a long poll, as Kafka's fetch max wait).
	FetchWaitTicks int
	// FetchTimeoutTicks: a follower that has had no answer to its fetch
	// for this long sends another. It must exceed FetchWaitTicks, or a
	// follower would give up on every held fetch.
	FetchTimeoutTicks int
	// MaxFetchEntries bounds the entries in one fetch answer.
	MaxFetchEntries int
	// MaxFetchBytes bounds the entries' data in one fetch answer; the
	// first entry goes whatever its size, so a follower always makes
	// progress. 0 means no bound but MaxFetchEntries. It keeps an answer
	// of many large entries (a CreateTopics of many topics) within the
	// transport's frame limit.
	MaxFetchBytes int
	// MaxUncommittedEntries bounds how far the controller's log may run
	// ahead of its commit index; Propose refuses beyond it.
	MaxUncommittedEntries int
	// FirstFetchSeq is where this incarnation's fetch sequence numbers
	// start (the first fetch has FirstFetchSeq+1). A driver gives every
	// start a random one, so an answer to a fetch of an earlier
	// incarnation (held by the controller, delivered after the restart)
	// is never taken for the answer to this one's: its commit index is
	// older than the restart, and CaughtUp must not trust it.
	FirstFetchSeq uint64
}

// Validate checks the settings and says which rule is broken.
func (c *Config) Validate() error {
	if err := c.Election.Validate(); err != nil {
		return err
	}
	if c.FetchWaitTicks < 1 {
		return fmt.Errorf("metalog: fetch wait ticks %d must be at least 1", c.FetchWaitTicks)
	}
	if c.FetchTimeoutTicks <= c.FetchWaitTicks {
		return fmt.Errorf("metalog: fetch timeout ticks %d must exceed fetch wait ticks %d, or every held fetch times out",
			c.FetchTimeoutTicks, c.FetchWaitTicks)
	}
	if c.MaxFetchEntries < 1 {
		return fmt.Errorf("metalog: max fetch entries %d must be at least 1", c.MaxFetchEntries)
	}
	if c.MaxUncommittedEntries < 1 {
		return fmt.Errorf("metalog: max uncommitted entries %d must be at least 1", c.MaxUncommittedEntries)
	}
	return nil
}
