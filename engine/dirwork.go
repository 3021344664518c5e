package engine

import "fmt"

// dirWork is what remains of a change to a log's directory that the log
// already made in memory, after a shortage of descriptors (EMFILE, ENFILE
// or the open-file budget: a directory sync opens the directory) stopped
// its file renames, removals or directory syncs: a truncation to an empty
// log (truncateFullyAndStartAtLocked), a truncation that removed later
// segments and must sync that before it cuts the segment left (TruncateTo),
// or a cleaner swap past its commit point (cleaner.swap). Such a shortage fails the operation, retriably,
// and never the log directory: the log takes no other change until the
// work is done (finishDirWorkLocked, first thing in every operation that
// changes the log's files: append, truncation, retention, the cleaner),
// and a restart finishes it from what is on disk, by the rules recovery
// applies to a crash at the same point (.tmp files are orphans,
// completeSwaps finishes a committed swap).
type dirWork struct {
	// what names the change, for errors.
	what string
	// steps run in order; each is removed once it succeeded, so a retry
	// starts at the step that failed.
	steps []func() error
	// pinned is the log's segment whose files may not have their final
	// names yet: its handles stay pinned, so nothing reopens them by name,
	// until every step is done.
	pinned *segment
	// then finishes the change in the log once its files are done; nil
	// for nothing. Run again after a failure, so it must be repeatable.
	then func() error
}

// finishDirWorkLocked runs the pending directory work, if any. An error
// is the directory's failure, or ErrTooManyOpenFiles (retriable: the
// work stays pending). Called under mu.
func (l *Log) finishDirWorkLocked() error {
	w := l.dirWork
	if w == nil {
		return nil
	}
	for len(w.steps) > 0 {
		if err := w.steps[0](); err != nil {
			return l.failErr(fmt.Errorf("%s: %w", w.what, err))
		}
		w.steps = w.steps[1:]
	}
	if w.pinned != nil {
		w.pinned.unpinAll()
		w.pinned = nil
	}
	if w.then != nil {
		if err := w.then(); err != nil {
			return err
		}
	}
	l.dirWork = nil
	return nil
}

// dropDirWorkLocked lets go of pending work when the log closes with it
// unfinished: the files are left as a crash at that point would leave
// them, and the next load finishes the change.
func (l *Log) dropDirWorkLocked() {
	if w := l.dirWork; w != nil && w.pinned != nil {
		w.pinned.unpinAll()
		w.pinned = nil
	}
	l.dirWork = nil
}
