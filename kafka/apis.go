package kafka

import (
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/wire"
)

// A handler runs on the connection's reader goroutine, synchronously and in
// request order, with the decoded request. It does the order-sensitive
// part of the work at once (a Produce appends here) and returns a Pending
// that the writer completes later, in order. A nil Pending sends nothing.
// A non-nil error closes the connection; Kafka error codes go in the
// response instead.
//
// Handlers are methods of *Server so they reach the broker through
// s.broker and the configuration through s.cfg; they are listed in the
// table below as method expressions, (*Server).handleX.
type handlerFunc func(s *Server, req *Request) (Pending, error)

// RequestHeader is the request header (versions 1 and 2), parsed by
// package wire.
type RequestHeader = wire.RequestHeader

// Request is one decoded request as a handler sees it.
type Request struct {
	Header RequestHeader
	// Body is the kmsg request for Header.ApiKey at Header.ApiVersion,
	// decoded with copies of its strings; byte fields (Produce records)
	// alias the frame, which nothing else reuses.
	Body kmsg.Request
	// CompatOnly is set for a version advertised only because old clients
	// probe the minimum (below apiEntry.MinServed): the handler answers
	// with a clean error (UNSUPPORTED_VERSION, or what Kafka answers) and
	// acts on nothing.
	CompatOnly bool
	// Session is the connection's state. Handlers may read and change it;
	// Pendings must not.
	Session *Session
	// FetchQuotaBytes is, for a consumer's Fetch under a consumer_byte_rate,
	// the most response bytes the quota lets through in one window (Kafka's
	// getMaxValueInQuotaWindow), less the response's own fields: the
	// handler bounds MaxBytes by it, so that a fetch of the full size alone
	// never exceeds the quota, whose throttled response would carry no
	// records (see writeSpliced) and the consumer never progress. 0 when
	// no quota applies.
	FetchQuotaBytes int32
}

// apiEntry is one row of the API table.
type apiEntry struct {
	Key kmsg.Key
	// Min and Max are the versions advertised in ApiVersions and accepted.
	// Advertise only versions a test covers.
	Min, Max int16
	// MinServed, when above Min, marks [Min, MinServed) as advertised for
	// compatibility only: the request is decoded and its handler called
	// with Request.CompatOnly set.
	MinServed int16
	// MaxRequestBytes caps this key's frames below
	// ServerConfig.MaxRequestBytes; 0 means no extra cap, which needs a
	// Precheck. Keys whose requests carry no record data get
	// smallRequestBytes: decoding multiplies a frame of many tiny array
	// elements by up to the factor TestDecodeAmplification measures, so
	// their frames are kept small (see doc.go, "Limits").
	MaxRequestBytes int32
	// Precheck, if set, vets the body before kmsg decodes it, without
	// allocating: for keys allowed large frames, where kmsg's decode could
	// multiply a frame of many tiny entries (precheckProduce).
	Precheck func(version int16, body []byte) error
	// BeforeAuth allows the key on a session not yet authenticated.
	BeforeAuth bool
	Handle     handlerFunc
}

// smallRequestBytes is the frame cap of keys without record data.
const smallRequestBytes = 1 << 20

// apiTable lists every API this broker serves. ApiVersions is generated
// from it; dispatch looks keys up in it. There is no other registration.
//
// To add an API: write NN_name.go with the header comment and
// func (s *Server) handleName(req *Request) (Pending, error), then add its
// row here. TestAPITable checks every row against kmsg.
var apiTable = [...]apiEntry{
	// In key order. Constraints from clients:
	// - Produce is advertised from v0 (librdkafka enables gzip and snappy
	//   only then) and served from v3 (record batch v2; older versions
	//   carry message format v0/v1): Min: 0, MinServed: 3.
	// - Fetch is advertised with Min <= 4 and FindCoordinator from v0, or
	//   librdkafka drops lz4 and the v2 record format.
	// - Produce alone has MaxRequestBytes 0 (ServerConfig.MaxRequestBytes),
	//   with Precheck: precheckProduce. Every other key, Fetch included:
	//   smallRequestBytes, unless a key gets a pre-check of its own.
	{Key: kmsg.Produce, Min: 0, MinServed: 3, Max: 11, Precheck: precheckProduce, Handle: (*Server).handleProduce},
	{Key: kmsg.Fetch, Min: 4, Max: 12, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleFetch},
	{Key: kmsg.ListOffsets, Min: 1, Max: 8, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleListOffsets},
	{Key: kmsg.Metadata, Min: 0, Max: 12, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleMetadata},
	{Key: kmsg.OffsetCommit, Min: 0, Max: 9, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleOffsetCommit},
	{Key: kmsg.OffsetFetch, Min: 0, Max: 9, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleOffsetFetch},
	{Key: kmsg.FindCoordinator, Min: 0, Max: 6, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleFindCoordinator},
	{Key: kmsg.JoinGroup, Min: 0, Max: 9, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleJoinGroup},
	{Key: kmsg.Heartbeat, Min: 0, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleHeartbeat},
	{Key: kmsg.LeaveGroup, Min: 0, Max: 5, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleLeaveGroup},
	{Key: kmsg.SyncGroup, Min: 0, Max: 5, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleSyncGroup},
	{Key: kmsg.DescribeGroups, Min: 0, Max: 5, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeGroups},
	{Key: kmsg.ListGroups, Min: 0, Max: 5, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleListGroups},
	{Key: kmsg.SASLHandshake, Min: 0, Max: 1, BeforeAuth: true,
		MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleSaslHandshake},
	{Key: kmsg.ApiVersions, Min: 0, Max: 4, BeforeAuth: true,
		MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleApiVersions},
	{Key: kmsg.CreateTopics, Min: 2, Max: 7, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleCreateTopics},
	{Key: kmsg.DeleteTopics, Min: 1, Max: 6, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDeleteTopics},
	{Key: kmsg.DeleteRecords, Min: 0, Max: 2, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDeleteRecords},
	{Key: kmsg.InitProducerID, Min: 0, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleInitProducerID},
	{Key: kmsg.AddPartitionsToTxn, Min: 0, Max: 5, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleAddPartitionsToTxn},
	{Key: kmsg.AddOffsetsToTxn, Min: 0, Max: 3, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleAddOffsetsToTxn},
	{Key: kmsg.EndTxn, Min: 0, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleEndTxn},
	{Key: kmsg.WriteTxnMarkers, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleWriteTxnMarkers},
	{Key: kmsg.OffsetForLeaderEpoch, Min: 2, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleOffsetForLeaderEpoch},
	{Key: kmsg.TxnOffsetCommit, Min: 0, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleTxnOffsetCommit},
	{Key: kmsg.DescribeACLs, Min: 1, Max: 3, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeACLs},
	{Key: kmsg.CreateACLs, Min: 1, Max: 3, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleCreateACLs},
	{Key: kmsg.DeleteACLs, Min: 1, Max: 3, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDeleteACLs},
	{Key: kmsg.SASLAuthenticate, Min: 0, Max: 2, BeforeAuth: true,
		MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleSaslAuthenticate},
	{Key: kmsg.DescribeConfigs, Min: 1, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeConfigs},
	{Key: kmsg.AlterConfigs, Min: 0, Max: 2, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleAlterConfigs},
	{Key: kmsg.DescribeLogDirs, Min: 1, Max: 4, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeLogDirs},
	{Key: kmsg.CreatePartitions, Min: 0, Max: 3, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleCreatePartitions},
	{Key: kmsg.DeleteGroups, Min: 0, Max: 2, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDeleteGroups},
	{Key: kmsg.ElectLeaders, Min: 0, Max: 2, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleElectLeaders},
	{Key: kmsg.IncrementalAlterConfigs, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleIncrementalAlterConfigs},
	{Key: kmsg.AlterPartitionAssignments, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleAlterPartitionReassignments},
	{Key: kmsg.ListPartitionReassignments, Min: 0, Max: 0, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleListPartitionReassignments},
	{Key: kmsg.OffsetDelete, Min: 0, Max: 0, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleOffsetDelete},
	{Key: kmsg.DescribeClientQuotas, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeClientQuotas},
	{Key: kmsg.AlterClientQuotas, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleAlterClientQuotas},
	{Key: kmsg.DescribeUserSCRAMCredentials, Min: 0, Max: 0, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeUserScramCredentials},
	{Key: kmsg.AlterUserSCRAMCredentials, Min: 0, Max: 0, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleAlterUserScramCredentials},
	{Key: kmsg.DescribeQuorum, Min: 0, Max: 2, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeQuorum},
	{Key: kmsg.DescribeCluster, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeCluster},
	{Key: kmsg.DescribeProducers, Min: 0, Max: 0, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleDescribeProducers},
	{Key: kmsg.ConsumerGroupHeartbeat, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleConsumerGroupHeartbeat},
	{Key: kmsg.ConsumerGroupDescribe, Min: 0, Max: 1, MaxRequestBytes: smallRequestBytes, Handle: (*Server).handleConsumerGroupDescribe},
}

// apiIndex is the table of one listener, indexed by key.
type apiIndex struct {
	byKey []*apiEntry
	// versions is the ApiVersions key list, sorted by key. Shared by every
	// response: read only.
	versions []kmsg.ApiVersionsResponseApiKey
}

func (x *apiIndex) lookup(key int16) *apiEntry {
	if key < 0 || int(key) >= len(x.byKey) {
		return nil
	}
	return x.byKey[key]
}

// buildAPIIndex checks the table and indexes its rows. A bad row is a
// programming error: it panics with the row.
func buildAPIIndex(table []apiEntry) apiIndex {
	var x apiIndex
	seen := make(map[kmsg.Key]bool)
	for i := range table {
		e := &table[i]
		req := kmsg.RequestForKey(int16(e.Key))
		switch {
		case req == nil:
			panic(fmt.Sprintf("kafka: api table row %d: key %d unknown to kmsg", i, e.Key))
		case seen[e.Key]:
			panic(fmt.Sprintf("kafka: api table row %d: key %d (%s) listed twice", i, e.Key, e.Key.Name()))
		case e.Min < 0 || e.Max < e.Min || e.Max > req.MaxVersion():
			panic(fmt.Sprintf("kafka: api table row %d: %s versions %d-%d outside kmsg's 0-%d",
				i, e.Key.Name(), e.Min, e.Max, req.MaxVersion()))
		case e.MinServed > e.Max:
			panic(fmt.Sprintf("kafka: api table row %d: %s MinServed %d > Max %d", i, e.Key.Name(), e.MinServed, e.Max))
		case e.MaxRequestBytes < 0:
			panic(fmt.Sprintf("kafka: api table row %d: %s MaxRequestBytes %d", i, e.Key.Name(), e.MaxRequestBytes))
		case e.Handle == nil:
			panic(fmt.Sprintf("kafka: api table row %d: %s has no handler", i, e.Key.Name()))
		}
		seen[e.Key] = true
		if int(e.Key) >= len(x.byKey) {
			x.byKey = slices.Grow(x.byKey, int(e.Key)+1-len(x.byKey))[:int(e.Key)+1]
		}
		x.byKey[e.Key] = e
		x.versions = append(x.versions, kmsg.ApiVersionsResponseApiKey{
			ApiKey: int16(e.Key), MinVersion: e.Min, MaxVersion: e.Max,
		})
	}
	if x.lookup(int16(kmsg.ApiVersions)) == nil {
		panic("kafka: api table has no ApiVersions row: clients cannot start")
	}
	// sort.Slice, not slices.SortFunc: run once at start, and a generic
	// sort of this struct would instantiate pdqsort for it (8 KiB).
	sort.Slice(x.versions, func(i, j int) bool { return x.versions[i].ApiKey < x.versions[j].ApiKey })
	return x
}
