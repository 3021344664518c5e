package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/security/acl"
	"github.com/wren-broker/wren/wire"
)

// Small fakes of the seam (seam.go), so each API's behaviour is tested
// beside its NN_name.go by calling its handler: no sockets, no disks. The
// end-to-end tests with real clients live in the broker package.

// fakeReplica is one partition: its answers are its fields.
type fakeReplica struct {
	leader      bool
	leaderEpoch int32
	hw          int64
	// epochStart is the leader epoch start offset (0: the zero value
	// never holds the high watermark back).
	epochStart int64
	logStart   int64
	logEnd     int64
	// writable is CheckWritable's answer (a failed or full log dir).
	writable error
	// appendErr fails AppendAsLeaderTimeout; ackErr fails its wait.
	appendErr error
	ackErr    error
	appended  [][]byte
	markers   []engine.TxnMarker
	epochs    []engine.EpochEntry
	producers []producer.Entry
	hwChanged chan struct{}
	// log, if set, is a real log the consumer reads go to (below hw).
	log *engine.Log
	// leaderFn, if set, answers Leader in place of leader (a leadership
	// that moves while a request waits).
	leaderFn func() bool
}

func (r *fakeReplica) Leader() (bool, int32) {
	if r.leaderFn != nil {
		return r.leaderFn(), r.leaderEpoch
	}
	return r.leader, r.leaderEpoch
}

func (r *fakeReplica) HighWatermark() int64 { return r.hw }
func (r *fakeReplica) LeaderState() (bool, int32, int64, int64) {
	if leader, _ := r.Leader(); !leader {
		return false, r.leaderEpoch, r.hw, -1
	}
	return true, r.leaderEpoch, r.hw, r.epochStart
}
func (r *fakeReplica) HighWatermarkChanged() <-chan struct{} {
	if r.hwChanged == nil {
		r.hwChanged = make(chan struct{})
	}
	return r.hwChanged
}

func (r *fakeReplica) AppendAsLeaderTimeout(records []byte, acks int16, _ time.Duration) (engine.AppendInfo, func() error, error) {
	if !r.leader {
		// As replication.Partition answers on a follower.
		return engine.AppendInfo{}, nil, fmt.Errorf("%w: not led by this node", kerr.NotLeaderForPartition)
	}
	if r.appendErr != nil {
		return engine.AppendInfo{}, nil, r.appendErr
	}
	r.appended = append(r.appended, records)
	info := engine.AppendInfo{FirstOffset: r.logEnd, LogAppendTime: -1, LogStartOffset: r.logStart, RecordCount: 1, Bytes: int64(len(records))}
	r.logEnd++
	return info, func() error { return r.ackErr }, nil
}

func (r *fakeReplica) AppendTxnMarkerAsLeader(m engine.TxnMarker, _ int16) (engine.AppendInfo, func() error, error) {
	if !r.leader {
		return engine.AppendInfo{}, nil, fmt.Errorf("%w: not led by this node", kerr.NotLeaderForPartition)
	}
	if r.appendErr != nil {
		return engine.AppendInfo{}, nil, r.appendErr
	}
	r.markers = append(r.markers, m)
	info := engine.AppendInfo{FirstOffset: r.logEnd, LastOffset: r.logEnd, LogAppendTime: -1, LogStartOffset: r.logStart}
	r.logEnd++
	return info, func() error { return r.ackErr }, nil
}

func (r *fakeReplica) ReadForConsumer(offset, maxBytes int64, minOne bool) (*engine.ReadResult, int64, int64, error) {
	if r.log != nil {
		rr, err := r.log.Read(offset, maxBytes, r.hw, minOne)
		return rr, r.hw, r.log.LogStartOffset(), err
	}
	if offset > r.hw || offset < r.logStart {
		return nil, r.hw, r.logStart, fmt.Errorf("%w: offset %d", engine.ErrOffsetOutOfRange, offset)
	}
	return &engine.ReadResult{}, r.hw, r.logStart, nil
}

func (r *fakeReplica) ReadCommittedForConsumer(offset, maxBytes int64, minOne bool) (engine.CommittedRead, error) {
	if r.log != nil {
		rr, lso, aborted, err := r.log.ReadCommitted(offset, maxBytes, r.hw, minOne)
		return engine.CommittedRead{Result: rr, HighWatermark: r.hw, LastStableOffset: lso, LogStartOffset: r.log.LogStartOffset(), Aborted: aborted}, err
	}
	rr, hw, start, err := r.ReadForConsumer(offset, maxBytes, minOne)
	return engine.CommittedRead{Result: rr, HighWatermark: hw, LastStableOffset: hw, LogStartOffset: start}, err
}

func (r *fakeReplica) LastStableOffset(hw int64) int64 {
	if r.log != nil {
		return r.log.LastStableOffset(hw)
	}
	return hw
}

func (r *fakeReplica) CheckWritable() error  { return r.writable }
func (r *fakeReplica) LogStartOffset() int64 { return r.logStart }
func (r *fakeReplica) LogEndOffset() int64   { return r.logEnd }

func (r *fakeReplica) OffsetForTimestamp(ts int64) (int64, int64, int32, bool, error) {
	switch ts {
	case engine.LatestTimestamp:
		return r.logEnd, -1, r.leaderEpoch, true, nil
	case engine.EarliestTimestamp:
		return r.logStart, -1, 0, true, nil
	}
	return 0, 0, 0, false, nil
}

// EndOffsetForEpoch answers as engine.Log does from its epoch cache
// (Kafka's LeaderEpochFileCache.endOffsetFor).
func (r *fakeReplica) EndOffsetForEpoch(requested int32) (int32, int64) {
	if len(r.epochs) == 0 || requested < 0 {
		return -1, -1
	}
	last := r.epochs[len(r.epochs)-1]
	switch {
	case requested == last.Epoch:
		return requested, r.logEnd
	case requested > last.Epoch:
		return -1, -1
	}
	i := 0
	for r.epochs[i].Epoch <= requested {
		i++
	}
	if i == 0 {
		return requested, r.epochs[0].StartOffset
	}
	return r.epochs[i-1].Epoch, r.epochs[i].StartOffset
}

func (r *fakeReplica) LeaderEpochs() []engine.EpochEntry { return r.epochs }
func (r *fakeReplica) ProducerStates() []producer.Entry  { return r.producers }

// fakePartitions hosts the replicas of its map.
type fakePartitions struct {
	replicas map[engine.TopicPartition]*fakeReplica
	writable error
	logDir   *fakeLogDir
}

func (p *fakePartitions) Partition(tp engine.TopicPartition) Replica {
	if r, ok := p.replicas[tp]; ok {
		return r
	}
	return nil
}

func (p *fakePartitions) DeleteRecords(tp engine.TopicPartition, offset int64) (int64, error) {
	r := p.replicas[tp]
	if r == nil {
		return -1, fmt.Errorf("%w: %v", engine.ErrInvalidTopicPartition, tp)
	}
	if offset == -1 {
		offset = r.hw
	}
	if offset > r.hw {
		return -1, fmt.Errorf("%w: %d is above the high watermark", engine.ErrOffsetOutOfRange, offset)
	}
	r.logStart = max(r.logStart, offset)
	return r.logStart, nil
}

func (p *fakePartitions) CheckWritable() error { return p.writable }
func (p *fakePartitions) LogDir() LogDir       { return p.logDir }

// fakeMetadata is a committed image and the quorum's facts.
type fakeMetadata struct {
	image        *cluster.Image
	nodeID       int32
	controllerID int32
	brokers      []int32
	// quorum, onQuorum and quorumErr are QuorumStatus's answer.
	quorum    quorum.Status
	onQuorum  bool
	quorumErr error
}

func (m *fakeMetadata) Image() *cluster.Image  { return m.image }
func (m *fakeMetadata) ClusterID() string      { return m.image.ClusterID }
func (m *fakeMetadata) NodeID() int32          { return m.nodeID }
func (m *fakeMetadata) ControllerID() int32    { return m.controllerID }
func (m *fakeMetadata) ControllerEpoch() int32 { return 1 }
func (m *fakeMetadata) Brokers() []int32       { return m.brokers }
func (m *fakeMetadata) Voters() []int32        { return m.brokers }
func (m *fakeMetadata) BrokerAddr(id int32, _ string) (string, int32, bool) {
	return fmt.Sprintf("node%d.test", id), 9092, true
}

func (m *fakeMetadata) QuorumStatus(context.Context) (quorum.Status, bool, error) {
	return m.quorum, m.onQuorum, m.quorumErr
}

// fakeController is the controller's write side. A node that is not the
// controller answers every write with NOT_CONTROLLER, as cluster does.
type fakeController struct {
	notController bool
	// forward, when set, is the acting controller elsewhere: ShouldForward
	// is true and ForwardRequest calls it.
	forward func(key, version int16, body []byte) ([]byte, error)
	// origins are the origins of the requests ForwardRequest sent, under
	// originsMu (a retry forwards from the writer goroutine).
	originsMu sync.Mutex
	origins   []cluster.RequestOrigin
	created   []cluster.CreateTopic
	// createErrs are the per-topic results by name.
	createErrs map[string]error

	// deleted are the names DeleteTopics was asked to delete; deleteErrs
	// the per-topic results by name.
	deleted    []string
	deleteErrs map[string]error
	// partitionCalls are CreatePartitions' calls; partitionErrs the
	// results by topic.
	partitionCalls []createPartitionsCall
	partitionErrs  map[string]error
	// alters are AlterConfigs' calls; alterErr its answer.
	alters   []alterConfigsCall
	alterErr error
	// elections are ElectLeaders' calls; elect answers them (nil: no
	// partition needed an election).
	elections []electCall
	elect     func(cluster.Election, []cluster.TopicPartition) ([]cluster.ElectLeadersResult, error)
	// reassignCalls are AlterPartitionReassignments' calls; reassignErrs
	// the per-partition results.
	reassignCalls []reassignCall
	reassignErrs  map[cluster.TopicPartition]error
	// listAsked are ListPartitionReassignments' arguments; ongoing and
	// listErr its answer.
	listAsked [][]cluster.TopicPartition
	ongoing   []cluster.OngoingReassignment
	listErr   error
	// scramCalls are AlterScramCredentials' calls; scram answers them
	// (nil: every user ok).
	scramCalls []cluster.AlterScramRequest
	scram      func(cluster.AlterScramRequest) ([]cluster.ScramResult, error)
	// quotaCalls are AlterClientQuotas' calls; quotas answers them (nil:
	// every entity ok).
	quotaCalls [][]cluster.QuotaAlteration
	quotas     func([]cluster.QuotaAlteration, bool) ([]cluster.QuotaResult, error)
	// createACLs and deleteACLs answer CreateACLs and DeleteACLs (nil:
	// every binding ok, no filter matches).
	createACLs func([]acl.Binding) ([]error, error)
	deleteACLs func([]acl.Filter) ([]cluster.DeleteACLsResult, error)
}

type createPartitionsCall struct {
	topic        string
	count        int32
	assignment   [][]int32
	validateOnly bool
}

type alterConfigsCall struct {
	rt                    cluster.ResourceType
	name                  string
	ops                   []cluster.ConfigOp
	replace, validateOnly bool
}

type electCall struct {
	election   cluster.Election
	partitions []cluster.TopicPartition
}

type reassignCall struct {
	reqs          []cluster.Reassignment
	allowRFChange bool
}

func (c *fakeController) errNotController() error {
	return fmt.Errorf("%w: node 1 is not the acting controller", kerr.NotController)
}

func (c *fakeController) CreateTopics(_ context.Context, topics []cluster.CreateTopic, validateOnly bool) ([]cluster.TopicResult, error) {
	var out []cluster.TopicResult
	for _, t := range topics {
		res := cluster.TopicResult{Name: t.Name, NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
		switch {
		case c.notController:
			res.Err = c.errNotController()
		case c.createErrs[t.Name] != nil:
			res.Err = c.createErrs[t.Name]
		case !validateOnly:
			c.created = append(c.created, t)
		}
		out = append(out, res)
	}
	return out, nil
}

func (c *fakeController) DeleteTopics(_ context.Context, names []string) ([]cluster.TopicResult, error) {
	var out []cluster.TopicResult
	for _, n := range names {
		res := cluster.TopicResult{Name: n}
		switch {
		case c.notController:
			res.Err = c.errNotController()
		case c.deleteErrs[n] != nil:
			res.Err = c.deleteErrs[n]
		default:
			c.deleted = append(c.deleted, n)
		}
		out = append(out, res)
	}
	return out, nil
}

func (c *fakeController) CreatePartitions(_ context.Context, name string, count int32, assignment [][]int32, validateOnly bool) error {
	if c.notController {
		return c.errNotController()
	}
	c.partitionCalls = append(c.partitionCalls, createPartitionsCall{name, count, assignment, validateOnly})
	return c.partitionErrs[name]
}

func (c *fakeController) AlterConfigs(_ context.Context, rt cluster.ResourceType, name string, ops []cluster.ConfigOp, replace, validateOnly bool) error {
	if c.notController {
		return c.errNotController()
	}
	c.alters = append(c.alters, alterConfigsCall{rt, name, ops, replace, validateOnly})
	return c.alterErr
}

func (c *fakeController) ElectLeaders(_ context.Context, el cluster.Election, partitions []cluster.TopicPartition) ([]cluster.ElectLeadersResult, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	c.elections = append(c.elections, electCall{el, partitions})
	if c.elect == nil {
		return nil, nil
	}
	return c.elect(el, partitions)
}

func (c *fakeController) AlterPartitionReassignments(_ context.Context, reqs []cluster.Reassignment, allowRFChange bool) ([]cluster.ReassignmentResult, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	c.reassignCalls = append(c.reassignCalls, reassignCall{reqs, allowRFChange})
	out := make([]cluster.ReassignmentResult, len(reqs))
	for i, r := range reqs {
		out[i] = cluster.ReassignmentResult{TopicPartition: r.TopicPartition, Err: c.reassignErrs[r.TopicPartition]}
	}
	return out, nil
}

func (c *fakeController) ListPartitionReassignments(partitions []cluster.TopicPartition) ([]cluster.OngoingReassignment, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	c.listAsked = append(c.listAsked, partitions)
	return c.ongoing, c.listErr
}

func (c *fakeController) AlterScramCredentials(_ context.Context, req cluster.AlterScramRequest) ([]cluster.ScramResult, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	c.scramCalls = append(c.scramCalls, req)
	if c.scram != nil {
		return c.scram(req)
	}
	var out []cluster.ScramResult
	for _, d := range req.Deletions {
		out = append(out, cluster.ScramResult{User: d.User})
	}
	for _, u := range req.Upsertions {
		out = append(out, cluster.ScramResult{User: u.User})
	}
	return out, nil
}

func (c *fakeController) AlterClientQuotas(_ context.Context, alts []cluster.QuotaAlteration, validateOnly bool) ([]cluster.QuotaResult, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	c.quotaCalls = append(c.quotaCalls, alts)
	if c.quotas != nil {
		return c.quotas(alts, validateOnly)
	}
	out := make([]cluster.QuotaResult, len(alts))
	for i, a := range alts {
		out[i] = cluster.QuotaResult{Entity: a.Entity}
	}
	return out, nil
}

func (c *fakeController) CreateACLs(_ context.Context, bindings []acl.Binding) ([]error, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	if c.createACLs != nil {
		return c.createACLs(bindings)
	}
	return make([]error, len(bindings)), nil
}

func (c *fakeController) DeleteACLs(_ context.Context, filters []acl.Filter) ([]cluster.DeleteACLsResult, error) {
	if c.notController {
		return nil, c.errNotController()
	}
	if c.deleteACLs != nil {
		return c.deleteACLs(filters)
	}
	return make([]cluster.DeleteACLsResult, len(filters)), nil
}

func (c *fakeController) ShouldForward() bool { return c.forward != nil }

func (c *fakeController) ForwardRequest(_ context.Context, key, version int16, body []byte, origin cluster.RequestOrigin) ([]byte, error) {
	c.originsMu.Lock()
	c.origins = append(c.origins, origin)
	c.originsMu.Unlock()
	return c.forward(key, version, body)
}

// fakeProducerIDs counts up from next, or fails with err.
type fakeProducerIDs struct {
	next int64
	err  error
}

func (p *fakeProducerIDs) Next(context.Context) (int64, error) {
	if p.err != nil {
		return -1, p.err
	}
	p.next++
	return p.next - 1, nil
}

// seamFixture is a Node of fakes: node 1 of brokers 1-3, hosting the
// replicas of partitions, with topic "t" (3 partitions, led by 1, 2, 3 at
// epoch 5) in its image.
type seamFixture struct {
	node        *Node
	s           *Server
	records     []cluster.Record
	partitions  *fakePartitions
	metadata    *fakeMetadata
	controller  *fakeController
	producerIDs *fakeProducerIDs
}

var testTopicID = cluster.UUID{1, 2, 3}

// testClientAddr is the client's address in the requests do serves.
var testClientAddr = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 50000}

func newSeamFixture(t *testing.T) *seamFixture {
	t.Helper()
	records := []cluster.Record{
		{Kind: cluster.KindCluster, Cluster: &cluster.ClusterRecord{ClusterID: "test-cluster"}},
		{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "t", ID: testTopicID}},
	}
	for p := range int32(3) {
		records = append(records, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{
			TopicID: testTopicID, Partition: p, Replicas: []int32{p + 1}, ISR: []int32{p + 1}, Leader: p + 1, LeaderEpoch: 5}})
	}
	im, err := cluster.ImageOf(records...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.NodeID = 1
	f := &seamFixture{
		partitions: &fakePartitions{replicas: map[engine.TopicPartition]*fakeReplica{
			{Topic: "t", Partition: 0}: {leader: true, leaderEpoch: 5, hw: 10, logEnd: 10,
				epochs: []engine.EpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 5, StartOffset: 7}}},
			// Partition 1 is hosted here as a follower.
			{Topic: "t", Partition: 1}: {leader: false, leaderEpoch: 5, hw: 10, logEnd: 10},
		}},
		records:     records,
		metadata:    &fakeMetadata{image: im, nodeID: 1, controllerID: 1, brokers: []int32{1, 2, 3}},
		controller:  &fakeController{},
		producerIDs: &fakeProducerIDs{next: 1000},
	}
	f.node = &Node{Config: cfg, Metadata: f.metadata, Controller: f.controller, Partitions: f.partitions,
		ProducerIDs: f.producerIDs, Host: "node1.test", Port: 9092}
	// NOT_CONTROLLER answers reach the test as they are; forward_test.go
	// tests the retry with a budget of its own.
	f.s, err = newServer(ServerConfig{Logger: slog.New(slog.DiscardHandler), NotControllerRetry: -1}, f.node, apiTable[:])
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// addRecords commits records after the fixture's, as the metadata log
// would: the image the handlers see is rebuilt from them all.
func (f *seamFixture) addRecords(t *testing.T, records ...cluster.Record) {
	t.Helper()
	f.records = append(f.records, records...)
	im, err := cluster.ImageOf(f.records...)
	if err != nil {
		t.Fatal(err)
	}
	f.metadata.image = im
}

// replica is the fake replica of partition p of "t".
func (f *seamFixture) replica(p int32) *fakeReplica {
	return f.partitions.replicas[engine.TopicPartition{Topic: "t", Partition: p}]
}

// do serves req as a connection's reader and writer would (conn.go):
// forwarded when it should be, else handled here, and the Pending run.
func (f *seamFixture) do(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	e := f.s.apis.lookup(req.Key())
	if e == nil {
		t.Fatalf("no handler for %s", kmsg.NameForKey(req.Key()))
	}
	// Round-trip through the wire encoding, so the handler sees what a
	// client's bytes decode to.
	body := kmsg.RequestForKey(req.Key())
	body.SetVersion(req.GetVersion())
	if err := body.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("%s v%d does not decode: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	r := &Request{Header: RequestHeader{ApiKey: req.Key(), ApiVersion: req.GetVersion(), ClientID: "test"},
		Body: body, Session: &Session{ListenerName: "PLAINTEXT", RemoteAddr: testClientAddr, ctx: ctx, authenticated: true}}
	p, err := f.s.serve(e, r)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	if p == nil {
		return nil
	}
	resp, err := p(ctx)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	if resp.Spliced == nil {
		return resp.Msg
	}
	defer resp.Spliced.Done()
	// File chunks come from a fake replica's real log (fakeReplica.log).
	out, err := wire.AppendTo(nil, resp.Spliced.Chunks)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	msg := req.ResponseKind()
	msg.SetVersion(req.GetVersion())
	if err := msg.ReadFrom(out); err != nil {
		t.Fatalf("%s: the spliced response does not decode: %v", kmsg.NameForKey(req.Key()), err)
	}
	return msg
}

// codeName names a Kafka error code in failure messages.
func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: error %s, want %s", what, codeName(got), codeName(w))
	}
}

// onWire is resp as the client decodes it: encoded at its version and
// decoded again, so fields the version does not carry are gone.
func onWire[T kmsg.Response](t *testing.T, resp T) T {
	t.Helper()
	fresh := resp.RequestKind().ResponseKind()
	fresh.SetVersion(resp.GetVersion())
	if err := fresh.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("%s v%d: the response does not decode: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return fresh.(T)
}

// configRecord sets key of a topic's or the brokers' configs.
func configRecord(rt cluster.ResourceType, name, key, value string) cluster.Record {
	return cluster.Record{Kind: cluster.KindConfig, Config: &cluster.ConfigRecord{ResourceType: rt, Name: name, Key: key, Value: &value}}
}

// forwardTo makes the acting controller another node, which answers every
// forwarded request with answer's response; it returns the requests the
// controller got, decoded.
func (f *seamFixture) forwardTo(t *testing.T, answer func(req kmsg.Request) kmsg.Response) *[]kmsg.Request {
	t.Helper()
	var got []kmsg.Request
	f.controller.forward = func(key, version int16, body []byte) ([]byte, error) {
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			t.Errorf("the forwarded %s v%d does not decode: %v", kmsg.NameForKey(key), version, err)
			return nil, err
		}
		got = append(got, req)
		resp := answer(req)
		resp.SetVersion(version)
		return resp.AppendTo(nil), nil
	}
	return &got
}
