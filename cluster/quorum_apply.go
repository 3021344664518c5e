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

// applyEntries applies committed entries to the image and offers it to
// the publisher. It runs on the driver goroutine, and does nothing that
// waits: decoding and applying records is all in memory, and the
// subscribers (who write to disk) run on the publisher's goroutine.
func (c *Controller) applyEntries(ents []metalog.Entry) {
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
	if im != old {
		c.image.Store(im)
		c.pub.offer(im)
	}
	// Also after entries that change no image (a leader change):
	// waitActing waits for those.
	c.q.notifyApplied()
}

// published runs on the publisher's goroutine once every subscriber has
// been given im.
func (c *Controller) published(im *Image) {
	c.maybeRegistered(im)
}

// proposeRecords is commit: the records become one entry, and it returns
// once the entry is committed, applied here and handed to the
// subscribers.
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
	index, err := c.q.driver.Propose(ctx, payload)
	if err == nil {
		// What a caller does next may depend on the subscribers (the
		// broker's partitions exist once CreateTopics answers).
		switch err := c.pub.wait(ctx, uint64(index)); {
		case err == nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("%w: the change is committed (metadata log entry %d), but this node did not finish applying it within %v",
				kerr.RequestTimedOut, index, commitTimeout)
		default:
			return ErrClosed
		}
	}
	switch {
	case errors.Is(err, metalog.ErrNotController), errors.Is(err, metalog.ErrNotCaughtUp),
		errors.Is(err, quorum.ErrProposalDropped):
		return fmt.Errorf("%w: node %d is not the acting controller (the controller is %d): %v",
			kerr.NotController, c.cfg.NodeID, c.ControllerID(), err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, metalog.ErrTooManyUncommitted):
		return fmt.Errorf("%w: the metadata quorum did not commit the change within %v", kerr.RequestTimedOut, commitTimeout)
	}
	return fmt.Errorf("%w: metadata quorum: %w", kerr.KafkaStorageError, err)
}
