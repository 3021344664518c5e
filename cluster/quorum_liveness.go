package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/wren-broker/wren/election"
)

// SetRegistration sets what this node's broker registers with (its rack
// and advertised listeners, known once its listener is bound). On a quorum
// its heartbeats carry it to the controller; on one voter it registers at
// once.
func (c *Controller) SetRegistration(ctx context.Context, rack string, listeners []BrokerListener) error {
	reg := BrokerRegistrationRecord{BrokerID: c.cfg.NodeID, Rack: rack, Listeners: listeners}
	if c.alone() {
		// Nobody to heartbeat to: it registers at once.
		return c.RegisterBroker(ctx, reg, true)
	}
	reg.IncarnationID, reg.AcksDurable = c.q.incarnation, c.q.cfg.AcksDurable
	c.q.mu.Lock()
	c.q.registration = &reg
	if c.q.registrationSet.IsZero() {
		c.q.registrationSet = time.Now()
	}
	c.q.mu.Unlock()
	select {
	case c.q.kick <- struct{}{}:
	default:
	}
	return nil
}

// Registered is closed once this node's image holds the registration of
// this process (its incarnation), at once with one voter. Until then the
// image may still show the previous process as a leader in the ISR, at a
// leader epoch whose records a crash may have taken: the broker must not
// lead or follow from it, since the controller has not yet decided whether
// the restart was clean (KIP-966). An acting controller of an older
// version never records incarnations; a caught-up node whose registration
// still has none after broker.session.timeout.ms goes on without it.
func (c *Controller) Registered() <-chan struct{} {
	if c.alone() {
		return closedChan
	}
	return c.q.registered
}

// maybeRegistered closes Registered once a published image holds this
// incarnation's registration.
func (c *Controller) maybeRegistered(im *Image) {
	if b, ok := im.Broker(c.cfg.NodeID); ok && b.IncarnationID == c.q.incarnation {
		c.q.registeredOnce.Do(func() { close(c.q.registered) })
	}
}

// brokerEpoch is the epoch of this incarnation's registration, 0 while
// the image does not hold it.
func (c *Controller) brokerEpoch() uint64 {
	if b, ok := c.Image().Broker(c.cfg.NodeID); ok && b.IncarnationID == c.q.incarnation {
		return b.Epoch
	}
	return 0
}

// maybeRegisteredByOldController closes Registered for a node the acting
// controller registered without an incarnation for a whole session since
// it first heartbeated: that controller predates incarnations.
func (c *Controller) maybeRegisteredByOldController(since time.Time) {
	q := c.q
	if since.IsZero() || time.Since(since) < q.cfg.BrokerSessionTimeout || !c.caughtUp() {
		return
	}
	if b, ok := c.Image().Broker(c.cfg.NodeID); ok && b.IncarnationID == (UUID{}) {
		q.registeredOnce.Do(func() {
			q.log.Warn("metadata quorum: the controller did not record this broker's incarnation within a session; going on without (a controller of an older version?)",
				"broker", c.cfg.NodeID, "broker.session.timeout.ms", q.cfg.BrokerSessionTimeout.Milliseconds())
			close(q.registered)
		})
	}
}

// heartbeat sends this node's registration to the controller every
// broker.heartbeat.interval.ms (to itself directly when it is the
// controller).
func (c *Controller) heartbeat() {
	q := c.q
	defer q.wg.Done()
	t := time.NewTicker(q.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		q.mu.Lock()
		reg, since := q.registration, q.registrationSet
		q.mu.Unlock()
		// Until this process is registered it heartbeats sooner: the broker
		// serves only once it is, and the first heartbeat may find no
		// controller known yet, or be lost with a connection being made.
		var soon <-chan time.Time
		if reg != nil && !c.registeredNow() {
			soon = time.After(min(unregisteredHeartbeatInterval, q.cfg.BrokerHeartbeatInterval))
		}
		if reg != nil {
			c.maybeRegisteredByOldController(since)
			epoch := c.brokerEpoch()
			var dir BrokerLogDir
			if q.cfg.LogDir != nil {
				dir = q.cfg.LogDir()
			}
			var dirMsg *BrokerLogDir
			if dir.Offline {
				dirMsg = &dir
			}
			switch ctrl := q.driver.SoftState().Controller; ctrl {
			case election.None:
			case election.NodeID(c.cfg.NodeID):
				q.mu.Lock()
				q.heard[c.cfg.NodeID] = heardBroker{at: time.Now(), reg: *reg, shuttingDown: q.shuttingDown, catchingUp: !c.caughtUp(),
					cleanShutdown: q.cfg.CleanShutdown, brokerEpoch: epoch, logDir: dir}
				q.mu.Unlock()
			default:
				// Queued under mu: a heartbeat without the shutdown flag
				// never follows the controlled shutdown request.
				q.mu.Lock()
				b, _ := json.Marshal(appMessage{Kind: appHeartbeat, Registration: reg, ShuttingDown: q.shuttingDown, CatchingUp: !c.caughtUp(),
					CleanShutdown: q.cfg.CleanShutdown, BrokerEpoch: epoch, LogDir: dirMsg})
				q.cfg.SendApp(ctrl, b)
				q.mu.Unlock()
			}
		}
		select {
		case <-q.stop:
			return
		case <-t.C:
		case <-q.kick:
		case <-soon:
		}
	}
}

// unregisteredHeartbeatInterval is how often a process not registered
// yet heartbeats (the acting controller decides every 100 ms).
const unregisteredHeartbeatInterval = 100 * time.Millisecond

func (c *Controller) registeredNow() bool {
	select {
	case <-c.Registered():
		return true
	default:
		return false
	}
}

// maintain is the acting controller's housekeeping, decided by the pure
// Liveness core (liveness.go) and carried out here: create the cluster id
// in a new cluster, register brokers that heartbeat, fence those whose
// session expired, unfence those heard again, finish controlled
// shutdowns, and check the leader balance.
func (c *Controller) maintain() {
	q := c.q
	defer q.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	lc := LivenessConfig{SessionTimeout: q.cfg.BrokerSessionTimeout, HeartbeatInterval: q.cfg.BrokerHeartbeatInterval}
	if rb := c.cfg.LeaderRebalance; rb != nil {
		lc.RebalanceInterval = rb.CheckInterval
	}
	live := NewLiveness(lc)
	var watch quorumWatch
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		c.watchQuorum(&watch, time.Now())
		acting := c.Acting()
		actions := live.Decide(time.Since(q.base), acting, c.Image(), c.heardBrokers())
		if len(actions) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		for _, a := range actions {
			c.carryOut(ctx, a)
		}
		cancel()
	}
}

// quorumWatch is what watchQuorum said last.
type quorumWatch struct {
	// noControllerSince is when this node last found no controller
	// after knowing one (zero while it knows one).
	noControllerSince time.Time
	// warned is how many voters the last warning said this node
	// reaches; 0 when it has not warned.
	warned int
}

// watchQuorum tells the operator, once, that this node has no controller
// and how many voters it reaches, after an election timeout without one
// (an election after a controller's loss takes about that long and says
// nothing); again only when that number changes; and, at INFO, when a
// controller is back. A node that is stopping says nothing more: its
// stop says why it cannot hand over.
func (c *Controller) watchQuorum(w *quorumWatch, now time.Time) {
	q := c.q
	ss := q.driver.SoftState()
	if ss.Controller != election.None {
		if w.warned > 0 {
			q.log.Info("metadata quorum: controller reachable again", "controller", int32(ss.Controller), "epoch", ss.Epoch)
		}
		*w = quorumWatch{}
		return
	}
	if w.noControllerSince.IsZero() {
		w.noControllerSince = now
	}
	timeout := time.Duration(q.cfg.Node.Election.ElectionTicks) * q.cfg.Tick
	q.mu.Lock()
	stopping := q.shuttingDown
	q.mu.Unlock()
	if now.Sub(w.noControllerSince) < timeout || stopping {
		return
	}
	reached, voters := c.QuorumReach(timeout)
	if reached > voters/2 {
		// A majority is there: an election is under way, or just
		// finished; nothing for the operator to mend.
		return
	}
	if reached == w.warned {
		return
	}
	w.warned = reached
	q.log.Warn(fmt.Sprintf("metadata quorum: no controller; this node reaches %d of %d voters (itself included), a majority is %d: "+
		"it serves no metadata changes until a majority of controller.quorum.voters is up and reachable", reached, voters, voters/2+1),
		"reached", reached, "voters", voters, "epoch", ss.Epoch, "without_controller_for", now.Sub(w.noControllerSince).Round(time.Second).String())
}

// heardBrokers is what this node heard from each broker, on Liveness's
// clock: heartbeats (itself included) and metadata quorum messages.
func (c *Controller) heardBrokers() map[int32]BrokerHeard {
	q := c.q
	out := map[int32]BrokerHeard{}
	q.mu.Lock()
	for id, h := range q.heard {
		out[id] = BrokerHeard{Heartbeat: h.at.Sub(q.base), HeartbeatSeen: true, Registration: h.reg,
			ShuttingDown: h.shuttingDown, CatchingUp: h.catchingUp, CleanShutdown: h.cleanShutdown, BrokerEpoch: h.brokerEpoch, LogDir: h.logDir}
	}
	q.mu.Unlock()
	// Its own state is known now, not as of its last heartbeat: a node
	// elected before it ever caught up has caught up by the time it can
	// commit anything, and must not fence itself for a stale flag.
	if h, ok := out[c.cfg.NodeID]; ok {
		h.CatchingUp = !c.caughtUp()
		out[c.cfg.NodeID] = h
	}
	for id, at := range q.driver.LastHeard() {
		h := out[int32(id)]
		h.Quorum, h.QuorumSeen = at.Sub(q.base), true
		out[int32(id)] = h
	}
	return out
}

// carryOut does one decision of the Liveness core through the event loop,
// and logs it once committed.
func (c *Controller) carryOut(ctx context.Context, a LivenessAction) {
	q := c.q
	switch a.Kind {
	case ActionClusterID:
		id := c.cfg.ClusterID
		if id == "" {
			id = NewUUID().String()
		}
		var res error
		var recorded []Record
		err := c.run(ctx, func() {
			r, err := decideNewCluster(c.Image(), id)
			if res = errors.Join(err, commitResult(c.commit, r)); res == nil {
				recorded = r.Records
			}
		})
		if err := errors.Join(err, res); err != nil {
			q.log.Debug("metadata quorum: cluster id or secret not recorded yet", "err", err)
			return
		}
		for _, r := range recorded {
			switch r.Kind {
			case KindCluster:
				q.log.Info("metadata quorum: new cluster", "cluster.id", id)
			case KindClusterSecret:
				q.log.Info("metadata quorum: cluster secret recorded")
			}
		}
	case ActionRegister:
		if err := c.RegisterBroker(ctx, a.Registration, !a.Unclean); err != nil {
			q.log.Debug("metadata quorum: broker registration not committed", "broker", a.Broker, "err", err)
			return
		}
		lvl := slog.LevelInfo
		if a.Unclean {
			lvl = slog.LevelWarn
		}
		q.log.Log(ctx, lvl, "metadata quorum: broker registered", "broker", a.Broker, "fenced", a.Registration.Fenced,
			"unclean", a.Unclean, "incarnation", a.Registration.IncarnationID.String(),
			"reason", a.Reason, "listeners", fmt.Sprint(a.Registration.Listeners))
	case ActionUnfence:
		if err := c.UnfenceBroker(ctx, a.Broker); err == nil {
			q.log.Info("metadata quorum: broker heard again, unfenced", "broker", a.Broker)
		}
	case ActionFence:
		if err := c.FenceBroker(ctx, a.Broker); err == nil {
			q.log.Warn("metadata quorum: broker fenced", "broker", a.Broker, "reason", a.Reason,
				"silent_for", a.SilentFor.Round(time.Millisecond).String())
		}
	case ActionControlledShutdown:
		if err := c.ControlledShutdown(ctx, a.Broker); err == nil {
			q.log.Info("metadata quorum: controlled shutdown of a broker", "broker", a.Broker, "reason", a.Reason)
		}
	case ActionRebalance:
		c.rebalanceOnce(ctx, c.cfg.LeaderRebalance.PerBrokerPercentage)
	case ActionLogDirOffline, ActionLogDirOnline:
		changes, err := c.SetBrokerLogDir(ctx, a.Broker, a.LogDir)
		if err != nil {
			q.log.Debug("metadata quorum: broker log dir state not committed", "broker", a.Broker, "err", err)
			return
		}
		var moved []string
		for _, ch := range changes {
			moved = append(moved, fmt.Sprintf("%s-%d leader %d->%d isr %v", ch.Topic, ch.After.Partition, ch.Before.Leader, ch.After.Leader, ch.After.ISR))
		}
		if a.Kind == ActionLogDirOffline {
			q.log.Warn("metadata quorum: broker's log dir takes no writes; it leaves every ISR and its leaderships move to in-sync replicas that can write",
				"broker", a.Broker, "dir", a.LogDir.Dir, "log_dir_reason", a.LogDir.Reason, "detail", a.LogDir.Detail, "reason", a.Reason,
				"partitions_changed", len(changes), "changes", strings.Join(moved, "; "))
		} else {
			q.log.Info("metadata quorum: broker's log dir takes writes again; it rejoins ISRs as it catches up",
				"broker", a.Broker, "partitions_changed", len(changes), "changes", strings.Join(moved, "; "))
		}
	}
}

// LogDirChanged tells the heartbeat loop that this node's log dir may
// have started or stopped taking writes (QuorumConfig.LogDir): it
// heartbeats at once, so the controller moves its leaderships within a
// round trip rather than a heartbeat interval.
func (c *Controller) LogDirChanged() {
	select {
	case c.q.kick <- struct{}{}:
	default:
	}
}

// rebalanceOnce is one auto.leader.rebalance check, logged when it moves
// leaders.
func (c *Controller) rebalanceOnce(ctx context.Context, percentPerBroker int) {
	changes, err := c.RebalanceLeaders(ctx, percentPerBroker)
	if err != nil {
		c.q.log.Debug("metadata quorum: leader rebalance not committed", "err", err)
		return
	}
	for _, ch := range changes {
		c.q.log.Info("metadata quorum: preferred leader elected for balance", "topic", ch.Topic, "partition", ch.After.Partition,
			"leader", ch.After.Leader, "previous_leader", ch.Before.Leader, "leader_epoch", ch.After.LeaderEpoch)
	}
}

func sameListeners(b BrokerImage, r *BrokerRegistrationRecord) bool {
	return b.Rack == r.Rack && fmt.Sprint(b.Listeners) == fmt.Sprint(r.Listeners)
}

// RequestControlledShutdown is this node's broker asking the acting
// controller to move its leaderships away before it exits (SIGTERM):
// applied here when this node is the acting controller, else sent over
// the CONTROLLER listener as the heartbeats are. From then on its
// heartbeats carry the shutdown flag, so the controller keeps it fenced.
// It returns once the change is committed; the caller waits for its image
// to show it. A one-voter controller has nobody to hand leadership to:
// nothing to do.
func (c *Controller) RequestControlledShutdown(ctx context.Context) error {
	q := c.q
	if c.alone() {
		return nil
	}
	q.mu.Lock()
	q.shuttingDown = true
	q.mu.Unlock()
	if c.Acting() {
		return c.controlledShutdownOf(ctx, c.cfg.NodeID)
	}
	a, err := c.forward(ctx, appMessage{Kind: appControlledShutdown})
	if err != nil {
		return err
	}
	return a.err
}

// controlledShutdownOf runs on the acting controller: the broker is
// marked shutting down before its leaderships move, so no heartbeat
// already in flight unfences it again.
func (c *Controller) controlledShutdownOf(ctx context.Context, id int32) error {
	q := c.q
	q.mu.Lock()
	if h, ok := q.heard[id]; ok {
		h.shuttingDown = true
		q.heard[id] = h
	}
	q.mu.Unlock()
	return c.ControlledShutdown(ctx, id)
}
