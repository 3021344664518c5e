package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
)

// applyEntries applies committed entries to the image and publishes it.
// It runs on the driver goroutine.
func (c *Controller) applyEntries(ents []metalog.Entry) {
	c.q.applyMu.Lock()
	defer c.q.applyMu.Unlock()
	old := c.image.Load()
	im := old
	for _, e := range ents {
		if e.Type != metalog.EntryRecords {
			continue
		}
		c.q.appliedBytes.Add(int64(len(e.Data)))
		recs, err := decodeEntry(e.Data)
		if err != nil {
			panic(fmt.Sprintf("cluster: committed metadata entry %d/%d does not decode: %v", e.Epoch, e.Index, err))
		}
		if im, err = applyRecords(im, uint64(e.Index), recs); err != nil {
			panic(fmt.Sprintf("cluster: committed metadata entry %d/%d does not apply: %v", e.Epoch, e.Index, err))
		}
	}
	if im == old {
		return
	}
	c.image.Store(im)
	c.q.notifyApplied()
	c.maybeRegistered(im)
	c.subMu.Lock()
	subs := append([]func(old, new *Image){}, c.subscribers...)
	c.subMu.Unlock()
	for _, fn := range subs {
		fn(old, im)
	}
}

// proposeRecords is commit on a quorum: the records become one entry,
// and it returns once the entry is committed and applied here.
func (c *Controller) proposeRecords(recs []Record) error {
	payload, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	go func() {
		// Close must not wait out a commit the quorum cannot make.
		select {
		case <-c.q.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = c.q.driver.Propose(ctx, payload)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, metalog.ErrNotController), errors.Is(err, metalog.ErrNotCaughtUp),
		errors.Is(err, quorum.ErrProposalDropped):
		return fmt.Errorf("%w: node %d is not the acting controller (the controller is %d): %v",
			kerr.NotController, c.cfg.NodeID, c.ControllerID(), err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, metalog.ErrTooManyUncommitted):
		return fmt.Errorf("%w: the metadata quorum did not commit the change within %v", kerr.RequestTimedOut, commitTimeout)
	}
	return fmt.Errorf("%w: metadata quorum: %w", kerr.KafkaStorageError, err)
}
