package broker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// component is one part of a running broker: the ops HTTP server, the log
// dir, the controller, the replicas, the group coordinator, the Kafka
// listener and so on. Start starts the broker's components in list order
// and Close closes them in reverse, so each part is up before the parts
// that use it, and outlives them. doc.go gives the order and its reasons.
type component struct {
	name string
	// start brings the component up. When it fails it leaves nothing of
	// its own open: the list closes only the components before it.
	start func() error
	// close undoes start; nil when there is nothing to undo. It is called
	// at most once, and only after start succeeded.
	close func() error
}

// components runs an ordered list of components.
type components struct {
	list   []component
	logger *slog.Logger
	// Invariant: list[:started] are started and not closed, and the
	// rest are not started.
	started int
}

// startError is a start that failed in one component.
type startError struct {
	component string
	err       error
}

// Error names the component first; the package prefix of the cause, and
// the component's name when the cause starts with it too (the ops
// component's errors start "ops: "), are dropped so that the message says
// each once.
func (e *startError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "broker: ")
	return "broker: " + e.component + ": " + strings.TrimPrefix(msg, e.component+": ")
}

func (e *startError) Unwrap() error { return e.err }

// start starts the components in order. When one fails it closes those
// already started, in reverse, and returns a *startError naming the one
// that failed; their close errors are logged, not returned, because the
// cause of the failed start is what the operator must read.
func (cs *components) start() error {
	if cs.started != 0 {
		panic("broker: components started twice")
	}
	for i, c := range cs.list {
		began := time.Now()
		if err := c.start(); err != nil {
			cs.logger.Debug("component failed to start", "component", c.name, "took", since(began), "err", err)
			if cerr := cs.close(); cerr != nil {
				cs.logger.Warn("closing what started before a failed start", "failed", c.name, "err", cerr)
			}
			return &startError{component: c.name, err: err}
		}
		cs.started = i + 1
		// Start-up time, part by part: recovery of a big log dir or a
		// slow quorum shows here.
		cs.logger.Debug("component started", "component", c.name, "took", since(began))
	}
	return nil
}

// close closes the started components in reverse order and joins their
// errors. A second call closes nothing.
func (cs *components) close() error {
	var errs []error
	for cs.started > 0 {
		cs.started--
		c := cs.list[cs.started]
		if c.close == nil {
			continue
		}
		began := time.Now()
		if err := c.close(); err != nil {
			cs.logger.Debug("component closed", "component", c.name, "took", since(began), "err", err)
			errs = append(errs, err)
			continue
		}
		cs.logger.Debug("component closed", "component", c.name, "took", since(began))
	}
	return errors.Join(errs...)
}

// since is a duration for the start-up log lines: components often start
// in microseconds, so milliseconds would say nothing.
func since(t time.Time) string {
	return time.Since(t).Round(time.Microsecond).String()
}

// task is a goroutine a component runs from its start to its close.
type task struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// goTask runs run in a goroutine until stop.
func goTask(run func(ctx context.Context)) *task {
	ctx, cancel := context.WithCancel(context.Background())
	t := &task{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		run(ctx)
	}()
	return t
}

// stop ends the goroutine's context and waits until it returned.
func (t *task) stop() error {
	t.cancel()
	<-t.done
	return nil
}

// background is a component that is only a goroutine, from start to close.
func background(name string, run func(ctx context.Context)) component {
	var t *task
	return component{
		name:  name,
		start: func() error { t = goTask(run); return nil },
		close: func() error { return t.stop() },
	}
}
