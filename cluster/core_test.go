package cluster

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/datadriven"
	"github.com/wren-broker/wren/security/acl"
	"github.com/wren-broker/wren/security/scram"
)

// TestRules runs testdata/rules/*.txt, one script per rule of the
// controller's pure core (core_*.go). A rule command builds the request,
// calls the rule on the current image, prints the records ("+ ") and the
// answer ("> ", or "error: " for a refusal of the whole request), then
// commits the records as the driver does (through their encoding, one
// entry at a time) and checks the partition invariants. Every call is
// also held to being pure: called twice on the same image with the same
// topic ids it returns the same Result, and the image it read is
// unchanged after.
//
//	image brokers=1,2,3 [fenced=3] [racks=a,b,a] [partitions=1] [rf=1]
//	      [min-isr=1] [unclean=true] [next-producer-id=N]
//	                                 a new image with these brokers; the
//	                                 rule config's defaults
//	create-topics NAME[:P[:RF]] ... [assign=NAME:1,2/2,3] [config=NAME:KEY:VALUE] [validate-only] [fail-entry=N]
//	                                 (a topic config key "bad.*" is refused)
//	delete-topics NAME ...
//	create-partitions NAME count=N [assign=1,2/2,3] [validate-only]
//	alter-configs topic NAME | broker [name=N] KEY:VALUE -KEY ... [replace] [validate-only]
//	register B [rack=R] [fenced] [unclean]
//	fence B | unfence B | shutdown B
//	log-dir B offline [reason=R] | log-dir B online
//	elect preferred|unclean [T-P ...]
//	rebalance [percent=10]
//	alter-isr T-P:ISR ... [leader=L] [leader-epoch=N] [partition-epoch=N] [fail-entry=N]
//	                                 one batch; epochs and leader default
//	                                 to the partition's in the image
//	reassign T-P:R,R,R | T-P:cancel ... [allow-rf-change]
//	list-reassignments [T-P ...]
//	producer-ids B
//	alter-scram -USER:MECH ... USER:MECH:ITERATIONS[:nosalt|:short] ...
//	                                 deletions (-) and upsertions; MECH is
//	                                 256, 512 or Kafka's type number; an
//	                                 upsertion's password is pw-USER, its
//	                                 salt salt-USER (nosalt: none; short: a
//	                                 salted password a byte short)
//	alter-quotas ENTITY|KEY:VALUE,KEY:- ...
//	                                 one entry per argument: ENTITY is
//	                                 TYPE/NAME parts joined by +, NAME *
//	                                 the default, - an empty entity; a
//	                                 VALUE of - removes the key
//	create-acls TYPE/NAME/PATTERN/PRINCIPAL/HOST/OP/PERM ...
//	delete-acls TYPE/NAME/PATTERN/PRINCIPAL/HOST/OP/PERM ...
//	                                 bindings and filters; the enums by
//	                                 Kafka's names or codes, NAME, PRINCIPAL
//	                                 and HOST "-" for none (a filter's any)
//	cluster-id ID
//	state                            every partition, broker, SCRAM user,
//	                                 client quota and ACL
//
// A command with the word summary prints how many records, not each;
// with fail-entry=N, entry N of its result fails to commit, and the
// answer is the one the driver gives then (CreateTopicsResponse.Answer,
// AlterISRAnswers).
func TestRules(t *testing.T) {
	datadriven.RunDir(t, "testdata/rules", func(t *testing.T) func(*datadriven.Cmd) string {
		e := &rulesEnv{le: &leaderEnv{t: t, im: emptyImage(), steps: true}, idNames: map[UUID]string{}}
		e.cfg = e.ruleConfig(1, 1)
		return e.handle
	})
}

// errCommitFailed is the commit error of fail-entry=N.
var errCommitFailed = fmt.Errorf("%w: metadata log: the entry did not commit", kerr.KafkaStorageError)

type rulesEnv struct {
	le      *leaderEnv // the image, commit and the invariants
	cfg     RuleConfig
	summary bool // print counts of records, not each
	// committed is how many entries of the last rule's result committed;
	// commitErr is the error of the next (fail-entry=N).
	committed int
	commitErr error
	nextID    int
	idNames   map[UUID]string
	out       strings.Builder
}

func (e *rulesEnv) printf(format string, args ...any) { fmt.Fprintf(&e.out, format+"\n", args...) }

// ruleConfig is the scripts' rule config: topic ids #1, #2, ..., a
// topic config validator that refuses keys "bad.*", and a broker layer
// check that refuses pair.a without pair.b.
func (e *rulesEnv) ruleConfig(partitions int32, rf int16) RuleConfig {
	return RuleConfig{
		DefaultPartitions: partitions, DefaultReplicationFactor: rf,
		ValidateTopicConfig: func(key string, _ *string) error {
			if strings.HasPrefix(key, "bad.") {
				return fmt.Errorf("unknown topic config %q", key)
			}
			return nil
		},
		ValidateBrokerLayer: func(name string, keys []string, configs map[string]string) error {
			_, a := configs["pair.a"]
			_, b := configs["pair.b"]
			if a && !b {
				return fmt.Errorf("broker %q: pair.a needs pair.b (keys changed: %v)", name, keys)
			}
			return nil
		},
		NewTopicID: func() UUID {
			e.nextID++
			id := UUID{0: 0xee, 14: byte(e.nextID >> 8), 15: byte(e.nextID)}
			e.idNames[id] = fmt.Sprintf("#%d", e.nextID)
			return id
		},
	}
}

func (e *rulesEnv) handle(c *datadriven.Cmd) string {
	e.out.Reset()
	t := e.le.t
	im := e.le.im
	e.summary = e.flag(c, "summary")
	switch c.Name {
	case "image":
		e.image(c)
	case "create-topics":
		req := CreateTopicsRequest{ValidateOnly: e.flag(c, "validate-only")}
		assignTopic, assignment := "", [][]int32(nil)
		if c.Has("assign") {
			name, a, _ := strings.Cut(c.Str("assign", ""), ":")
			assignTopic, assignment = name, e.assignment(c, a)
		}
		var cfgTopic, cfgKey, cfgValue string
		if c.Has("config") {
			parts := strings.SplitN(c.Str("config", ""), ":", 3)
			if len(parts) != 3 {
				t.Fatalf("%s: config=NAME:KEY:VALUE", c.Pos)
			}
			cfgTopic, cfgKey, cfgValue = parts[0], parts[1], parts[2]
		}
		for _, spec := range c.Args {
			f := strings.Split(spec, ":")
			ct := CreateTopic{Name: f[0], NumPartitions: -1, ReplicationFactor: -1}
			if len(f) > 1 {
				ct.NumPartitions = int32(e.atoi(c, f[1]))
			}
			if len(f) > 2 {
				ct.ReplicationFactor = int16(e.atoi(c, f[2]))
			}
			if ct.Name == assignTopic {
				ct.Assignment = assignment
			}
			if ct.Name == cfgTopic {
				ct.Configs = map[string]*string{cfgKey: &cfgValue}
			}
			req.Topics = append(req.Topics, ct)
		}
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[CreateTopicsResponse] { return DecideCreateTopics(im, cfg, req) })
		for i, res := range r.Response.Answer(e.committed, e.commitErr) {
			e.printf("> %s entry=%d", e.topicResult(res), r.Response.Entry[i])
		}
	case "delete-topics":
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]TopicResult] { return DecideDeleteTopics(im, cfg, c.Args) })
		for _, res := range r.Response {
			e.printf("> %s", e.topicResult(res))
		}
	case "create-partitions":
		req := CreatePartitionsRequest{Name: c.Args[0], Count: int32(c.Int(t, "count", 0)), ValidateOnly: e.flag(c, "validate-only")}
		if c.Has("assign") {
			req.Assignment = e.assignment(c, c.Str("assign", ""))
		}
		runRule(e, c, func(im *Image, cfg RuleConfig) Result[struct{}] { return DecideCreatePartitions(im, cfg, req) })
	case "alter-configs":
		req := AlterConfigsRequest{Replace: e.flag(c, "replace"), ValidateOnly: e.flag(c, "validate-only")}
		args := c.Args
		switch args[0] {
		case "topic":
			req.ResourceType, req.Name, args = ResourceTopic, args[1], args[2:]
		case "broker":
			req.ResourceType, req.Name, args = ResourceBroker, c.Str("name", ""), args[1:]
		default:
			req.ResourceType, req.Name, args = ResourceType(e.atoi(c, args[0])), args[1], args[2:]
		}
		for _, a := range args {
			if k, ok := strings.CutPrefix(a, "-"); ok {
				req.Ops = append(req.Ops, ConfigOp{Key: k})
				continue
			}
			k, v, ok := strings.Cut(a, ":")
			if !ok {
				t.Fatalf("%s: %q is neither KEY:VALUE nor -KEY", c.Pos, a)
			}
			req.Ops = append(req.Ops, ConfigOp{Key: k, Value: &v})
		}
		runRule(e, c, func(im *Image, cfg RuleConfig) Result[struct{}] { return DecideAlterConfigs(im, cfg, req) })
	case "register":
		req := RegisterBrokerRequest{CleanShutdown: !e.flag(c, "unclean"), Registration: BrokerRegistrationRecord{
			BrokerID: e.broker(c), Rack: c.Str("rack", ""), Fenced: e.flag(c, "fenced")}}
		runRule(e, c, func(im *Image, cfg RuleConfig) Result[struct{}] { return DecideRegisterBroker(im, cfg, req) })
	case "fence", "unfence", "shutdown":
		rule := map[string]func(*Image, RuleConfig, int32) Result[struct{}]{
			"fence": DecideFenceBroker, "unfence": DecideUnfenceBroker, "shutdown": DecideControlledShutdown}[c.Name]
		b := e.broker(c)
		runRule(e, c, func(im *Image, cfg RuleConfig) Result[struct{}] { return rule(im, cfg, b) })
	case "log-dir":
		req := BrokerLogDirRequest{Broker: e.broker(c), LogDir: BrokerLogDir{Dir: "/data"}}
		if e.flag(c, "offline") {
			req.LogDir.Offline, req.LogDir.Reason, req.LogDir.Detail = true, c.Str("reason", LogDirBelowFloor), "figures"
		}
		e.flag(c, "online")
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]PartitionChange] { return DecideBrokerLogDir(im, cfg, req) })
		if r.Err == nil {
			e.printf("> %d partition changes", len(r.Response))
		}
	case "elect":
		req := ElectLeadersRequest{}
		switch c.Args[0] {
		case "preferred":
			req.Election = ElectPreferred
		case "unclean":
			req.Election = ElectUnclean
		default:
			req.Election = Election(e.atoi(c, c.Args[0]))
		}
		for _, a := range c.Args[1:] {
			req.Partitions = append(req.Partitions, e.partition(c, a))
		}
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]ElectLeadersResult] { return DecideElectLeaders(im, cfg, req) })
		for _, res := range r.Response {
			if res.Err != nil {
				e.printf("> %s-%d: %v", res.Topic, res.Partition, res.Err)
			} else {
				e.printf("> %s-%d: leader %d", res.Topic, res.Partition, res.Leader)
			}
		}
		if len(r.Response) == 0 {
			e.printf("> none")
		}
	case "rebalance":
		percent := c.Int(t, "percent", 10)
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]PartitionChange] {
			return DecideRebalanceLeaders(im, cfg, percent)
		})
		for _, ch := range r.Response {
			e.printf("> %s-%d: leader %d -> %d", ch.Topic, ch.After.Partition, ch.Before.Leader, ch.After.Leader)
		}
		if len(r.Response) == 0 {
			e.printf("> none")
		}
	case "alter-isr":
		var reqs []AlterISRRequest
		var names []string
		for _, a := range c.Args {
			tp, isr, ok := strings.Cut(a, ":")
			if !ok {
				t.Fatalf("%s: %q is not T-P:ISR", c.Pos, a)
			}
			p := e.partition(c, tp)
			req := AlterISRRequest{Partition: p.Partition, Leader: NoLeader, ISR: ids(t, c, isr)}
			if ti := im.Topic(p.Topic); ti != nil && int(p.Partition) < len(ti.Partitions) {
				pi := ti.Partitions[p.Partition]
				req.TopicID, req.Leader, req.LeaderEpoch, req.PartitionEpoch = ti.ID, pi.Leader, pi.LeaderEpoch, pi.PartitionEpoch
			}
			req.Leader = int32(c.Int(t, "leader", int(req.Leader)))
			req.LeaderEpoch = int32(c.Int(t, "leader-epoch", int(req.LeaderEpoch)))
			req.PartitionEpoch = int32(c.Int(t, "partition-epoch", int(req.PartitionEpoch)))
			reqs, names = append(reqs, req), append(names, tp)
		}
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]AlterISRAnswer] { return DecideAlterISR(im, cfg, reqs) })
		for i, a := range AlterISRAnswers(r.Response, e.committed, e.commitErr) {
			if a.Err != nil {
				e.printf("> %s: %v", names[i], a.Err)
			} else {
				e.printf("> %s: isr=%v partition-epoch=%d entry=%d", names[i], fmtIDs(a.After.ISR), a.After.PartitionEpoch, a.Entry)
			}
		}
	case "reassign":
		req := ReassignRequest{AllowRFChange: e.flag(c, "allow-rf-change")}
		for _, a := range c.Args {
			tp, target, ok := strings.Cut(a, ":")
			if !ok {
				t.Fatalf("%s: %q is not T-P:REPLICAS or T-P:cancel", c.Pos, a)
			}
			r := Reassignment{TopicPartition: e.partition(c, tp)}
			if target != "cancel" {
				r.Replicas = ids(t, c, target)
				if r.Replicas == nil {
					r.Replicas = []int32{}
				}
			}
			req.Reassignments = append(req.Reassignments, r)
		}
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]ReassignmentResult] {
			return DecideAlterPartitionReassignments(im, cfg, req)
		})
		for _, res := range r.Response {
			if res.Err != nil {
				e.printf("> %s-%d: %v", res.Topic, res.Partition, res.Err)
			} else {
				e.printf("> %s-%d: ok", res.Topic, res.Partition)
			}
		}
	case "list-reassignments":
		var parts []TopicPartition
		for _, a := range c.Args {
			parts = append(parts, e.partition(c, a))
		}
		out, err := ListReassignments(im, parts)
		if err != nil {
			e.printf("error: %v", err)
		}
		for _, o := range out {
			e.printf("> %s-%d replicas=%v adding=%v removing=%v", o.Topic, o.Partition, fmtIDs(o.Replicas), fmtIDs(o.AddingReplicas), fmtIDs(o.RemovingReplicas))
		}
		if err == nil && len(out) == 0 {
			e.printf("> none")
		}
	case "producer-ids":
		b := e.broker(c)
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[int64] { return DecideAllocateProducerIDs(im, cfg, b) })
		if r.Err == nil {
			e.printf("> first=%d", r.Response)
		}
	case "alter-scram":
		req := e.scramRequest(c)
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]ScramResult] {
			return DecideAlterScramCredentials(im, cfg, req)
		})
		for _, res := range r.Response {
			if res.Err != nil {
				e.printf("> %s: %v", res.User, res.Err)
			} else {
				e.printf("> %s: ok", res.User)
			}
		}
	case "alter-quotas":
		alts := e.quotaAlterations(c)
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]QuotaResult] {
			return DecideAlterClientQuotas(im, cfg, alts)
		})
		for i, res := range r.Response {
			entity, _, _ := strings.Cut(c.Args[i], "|")
			if res.Err != nil {
				e.printf("> %s: %v", entity, res.Err)
			} else {
				e.printf("> %s: ok", entity)
			}
		}
	case "bootstrap-scram":
		// bootstrap-scram USER:MECH:ITERATIONS...: the bootstrap admin's
		// credentials, as alter-scram's upsertions.
		req := e.scramRequest(c)
		r := runRule(e, c, func(im *Image, _ RuleConfig) Result[bool] { return DecideBootstrapScram(im, req.Upsertions) })
		if r.Err == nil {
			e.printf("> wrote=%v", r.Response)
		}
	case "cluster-secret":
		// cluster-secret <text>: the text's bytes as the secret.
		runRule(e, c, func(im *Image, _ RuleConfig) Result[struct{}] { return DecideClusterSecret(im, []byte(c.Args[0])) })
		if d := e.le.im.DerivedSecret("test"); d != nil {
			e.printf("> derived %x", d[:4])
		} else {
			e.printf("> none")
		}
	case "create-acls":
		var bindings []acl.Binding
		for _, a := range c.Args {
			bindings = append(bindings, e.aclBinding(c, a))
		}
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]error] { return DecideCreateACLs(im, cfg, bindings) })
		for i, err := range r.Response {
			if err != nil {
				e.printf("> %s: %v", c.Args[i], err)
			} else {
				e.printf("> %s: ok", c.Args[i])
			}
		}
	case "delete-acls":
		var filters []acl.Filter
		for _, a := range c.Args {
			b := e.aclBinding(c, a)
			f := acl.Filter{ResourceType: b.ResourceType, PatternType: b.PatternType, Operation: b.Operation, Permission: b.Permission}
			if b.ResourceName != "" {
				f.ResourceName = &b.ResourceName
			}
			if b.Principal != "" {
				f.Principal = &b.Principal
			}
			if b.Host != "" {
				f.Host = &b.Host
			}
			filters = append(filters, f)
		}
		r := runRule(e, c, func(im *Image, cfg RuleConfig) Result[[]DeleteACLsResult] { return DecideDeleteACLs(im, cfg, filters) })
		for i, res := range r.Response {
			if res.Err != nil {
				e.printf("> %s: %v", c.Args[i], res.Err)
				continue
			}
			e.printf("> %s: %d deleted", c.Args[i], len(res.Deleted))
			for _, b := range res.Deleted {
				e.printf(">   %s", aclLine(b))
			}
		}
	case "cluster-id":
		runRule(e, c, func(im *Image, _ RuleConfig) Result[struct{}] { return DecideClusterID(im, c.Args[0]) })
		e.printf("> cluster %s", e.le.im.ClusterID)
	case "state":
		for _, name := range im.TopicNames() {
			if e.summary {
				e.printf("%s: %d partitions", name, len(im.Topic(name).Partitions))
				continue
			}
			for _, p := range im.Topic(name).Partitions {
				e.printf("%s", e.partitionLine(name, p))
			}
			if cfgs := im.Topic(name).Configs; len(cfgs) > 0 {
				e.printf("%s configs %v", name, cfgs)
			}
		}
		for _, b := range im.Brokers() {
			e.printf("broker %d fenced=%t rack=%q log-dir-offline=%t", b.ID, b.Fenced, b.Rack, b.LogDir.Offline)
		}
		for _, u := range im.ScramUsers() {
			var creds []string
			for _, info := range im.ScramInfos(u) {
				creds = append(creds, fmt.Sprintf("%s:%d", info.Mechanism, info.Iterations))
			}
			e.printf("user %s %s", u, strings.Join(creds, " "))
		}
		for _, q := range im.QuotaEntities() {
			var kv []string
			for _, k := range QuotaKeys {
				if v, ok := im.ClientQuota(q, k); ok {
					kv = append(kv, fmt.Sprintf("%s=%v", k, v))
				}
			}
			e.printf("quota %s %s", q, strings.Join(kv, " "))
		}
		for _, b := range im.ACLs() {
			e.printf("acl %s", aclLine(b))
		}
	default:
		t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	return strings.TrimRight(e.out.String(), "\n")
}

// runRule calls rule on the current image, twice, holding it to being
// pure; prints its records and refusal; and commits its entries.
func runRule[T any](e *rulesEnv, c *datadriven.Cmd, rule func(*Image, RuleConfig) Result[T]) Result[T] {
	t, im := e.le.t, e.le.im
	before, err := encodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	firstID := e.nextID
	r := rule(im, e.cfg)
	afterIDs := e.nextID
	e.nextID = firstID
	again := rule(im, e.cfg)
	if e.nextID != afterIDs || !reflect.DeepEqual(r, again) {
		first, _ := json.Marshal(r.Records)
		second, _ := json.Marshal(again.Records)
		t.Fatalf("%s: the rule returned another result on the same input:\n%s %+v\n%s %+v", c.Pos, first, r.Response, second, again.Response)
	}
	if after, _ := encodeImage(im); string(after) != string(before) {
		t.Fatalf("%s: the rule changed the image it read", c.Pos)
	}
	if r.Err != nil && len(r.Records) > 0 {
		t.Fatalf("%s: a refusal (%v) with %d records", c.Pos, r.Err, len(r.Records))
	}
	if !slices.IsSorted(r.Bounds) || len(r.Bounds) > 0 && (r.Bounds[0] <= 0 || r.Bounds[len(r.Bounds)-1] >= len(r.Records)) {
		t.Fatalf("%s: bounds %v of %d records", c.Pos, r.Bounds, len(r.Records))
	}
	names := map[UUID]string{}
	for _, rec := range r.Records {
		if rec.Kind == KindTopic {
			names[rec.Topic.ID] = rec.Topic.Name
		}
		if !e.summary {
			e.printf("+ %s", e.recordLine(names, rec))
		}
	}
	if e.summary && len(r.Records) > 0 {
		e.printf("+ %d records", len(r.Records))
	}
	if n := len(r.Entries()); n > 1 {
		e.printf("entries: %d", n)
	}
	if r.Err != nil {
		e.printf("error: %v", r.Err)
	}
	if len(r.Records) == 0 && r.Err == nil {
		e.printf("no records")
	}
	// fail-entry=N: entry N fails to commit, and the ones after it are
	// never tried (commitEntries).
	e.committed, e.commitErr = len(r.Entries()), nil
	if n := c.Int(t, "fail-entry", -1); n >= 0 && n < len(r.Entries()) {
		e.committed, e.commitErr = n, errCommitFailed
		e.printf("entry %d fails", n)
	}
	for _, entry := range r.Entries()[:e.committed] {
		e.le.commit(entry)
	}
	e.le.checkInvariants(c, im)
	return r
}

func (e *rulesEnv) image(c *datadriven.Cmd) {
	t := e.le.t
	e.le.im, e.le.cfg = emptyImage(), LeaderConfig{MinInsyncReplicas: c.Int(t, "min-isr", 1), UncleanLeaderElectionEnable: c.Str("unclean", "false") == "true"}
	e.cfg = e.ruleConfig(int32(c.Int(t, "partitions", 1)), int16(c.Int(t, "rf", 1)))
	e.cfg.Leader = e.le.cfg
	fenced := ids(t, c, c.Str("fenced", ""))
	racks := strings.Split(c.Str("racks", ""), ",")
	for i, b := range ids(t, c, c.Str("brokers", "")) {
		reg := &BrokerRegistrationRecord{BrokerID: b, Fenced: slices.Contains(fenced, b)}
		if i < len(racks) {
			reg.Rack = racks[i]
		}
		e.le.commit([]Record{{Kind: KindBrokerRegistration, BrokerRegistration: reg}})
	}
	if c.Has("next-producer-id") {
		next := c.Int64(t, "next-producer-id", 0)
		e.le.commit([]Record{{Kind: KindProducerIDs, ProducerIDs: &ProducerIDsRecord{NextBlockStart: next, BlockSize: ProducerIDBlockSize}}})
	}
	e.printf("%d brokers", len(e.le.im.Brokers()))
}

// flag reports whether word is among the positional arguments, and takes
// it out of them.
func (e *rulesEnv) flag(c *datadriven.Cmd, word string) bool {
	i := slices.Index(c.Args, word)
	if i < 0 {
		return false
	}
	c.Args = slices.Delete(c.Args, i, i+1)
	return true
}

// quotaAlterations parses alter-quotas' arguments.
func (e *rulesEnv) quotaAlterations(c *datadriven.Cmd) []QuotaAlteration {
	var alts []QuotaAlteration
	for _, a := range c.Args {
		entity, ops, ok := strings.Cut(a, "|")
		if !ok {
			e.le.t.Fatalf("%s: %q is not ENTITY|OPS", c.Pos, a)
		}
		var alt QuotaAlteration
		if entity != "-" {
			for _, part := range strings.Split(entity, "+") {
				typ, name, _ := strings.Cut(part, "/")
				d := QuotaEntityData{Type: typ}
				if name != "*" {
					d.Name = &name
				}
				alt.Entity = append(alt.Entity, d)
			}
		}
		for _, op := range strings.Split(ops, ",") {
			k, v, _ := strings.Cut(op, ":")
			if v == "-" {
				alt.Ops = append(alt.Ops, QuotaOp{Key: k, Remove: true})
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				e.le.t.Fatalf("%s: %q: %v", c.Pos, op, err)
			}
			alt.Ops = append(alt.Ops, QuotaOp{Key: k, Value: f})
		}
		alts = append(alts, alt)
	}
	return alts
}

// scramRequest parses alter-scram's arguments.
func (e *rulesEnv) scramRequest(c *datadriven.Cmd) AlterScramRequest {
	var req AlterScramRequest
	mech := func(s string) scram.Mechanism {
		switch s {
		case "256":
			return scram.SHA256
		case "512":
			return scram.SHA512
		}
		return scram.Mechanism(e.atoi(c, s))
	}
	for _, a := range c.Args {
		if del, ok := strings.CutPrefix(a, "-"); ok {
			user, m, ok := strings.Cut(del, ":")
			if !ok {
				e.le.t.Fatalf("%s: %q is not -USER:MECH", c.Pos, a)
			}
			req.Deletions = append(req.Deletions, ScramDeletion{User: user, Mechanism: mech(m)})
			continue
		}
		f := strings.Split(a, ":")
		if len(f) < 3 {
			e.le.t.Fatalf("%s: %q is not USER:MECH:ITERATIONS", c.Pos, a)
		}
		u := ScramUpsertion{User: f[0], Mechanism: mech(f[1]), Iterations: int32(e.atoi(c, f[2])), Salt: []byte("salt-" + f[0])}
		if len(f) > 3 && f[3] == "nosalt" {
			u.Salt = nil
		}
		m := u.Mechanism
		if !m.Valid() {
			m = scram.SHA256
		}
		sp, err := m.SaltedPassword("pw-"+f[0], []byte("salt-"+f[0]), max(u.Iterations, 1))
		if err != nil {
			e.le.t.Fatal(err)
		}
		if len(f) > 3 && f[3] == "short" {
			sp = sp[1:]
		}
		u.SaltedPassword = sp
		req.Upsertions = append(req.Upsertions, u)
	}
	return req
}

// aclBinding parses TYPE/NAME/PATTERN/PRINCIPAL/HOST/OP/PERM, "-" for
// an empty string.
func (e *rulesEnv) aclBinding(c *datadriven.Cmd, s string) acl.Binding {
	f := strings.Split(s, "/")
	if len(f) != 7 {
		e.le.t.Fatalf("%s: %q is not TYPE/NAME/PATTERN/PRINCIPAL/HOST/OP/PERM", c.Pos, s)
	}
	for i := range f {
		if f[i] == "-" {
			f[i] = ""
		}
	}
	enum := func(s string, parse func(string) (int8, error)) int8 {
		if v, err := parse(s); err == nil {
			return v
		}
		return int8(e.atoi(c, s))
	}
	return acl.Binding{
		ResourceType: kmsg.ACLResourceType(enum(f[0], func(s string) (int8, error) { v, err := kmsg.ParseACLResourceType(s); return int8(v), err })),
		ResourceName: f[1],
		PatternType:  kmsg.ACLResourcePatternType(enum(f[2], func(s string) (int8, error) { v, err := kmsg.ParseACLResourcePatternType(s); return int8(v), err })),
		Principal:    f[3],
		Host:         f[4],
		Operation:    kmsg.ACLOperation(enum(f[5], func(s string) (int8, error) { v, err := kmsg.ParseACLOperation(s); return int8(v), err })),
		Permission:   kmsg.ACLPermissionType(enum(f[6], func(s string) (int8, error) { v, err := kmsg.ParseACLPermissionType(s); return int8(v), err })),
	}
}

// aclLine prints a binding as aclBinding reads it.
func aclLine(b acl.Binding) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s", b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

func (e *rulesEnv) atoi(c *datadriven.Cmd, s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		e.le.t.Fatalf("%s: %q: %v", c.Pos, s, err)
	}
	return v
}

func (e *rulesEnv) broker(c *datadriven.Cmd) int32 {
	if len(c.Args) == 0 {
		e.le.t.Fatalf("%s: %s needs a broker id", c.Pos, c.Name)
	}
	return int32(e.atoi(c, c.Args[0]))
}

// partition parses T-P; the topic need not exist.
func (e *rulesEnv) partition(c *datadriven.Cmd, s string) TopicPartition {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		e.le.t.Fatalf("%s: %q is not T-P", c.Pos, s)
	}
	return TopicPartition{Topic: s[:i], Partition: int32(e.atoi(c, s[i+1:]))}
}

// assignment parses 1,2/2,3: a partition's replicas per '/'.
func (e *rulesEnv) assignment(c *datadriven.Cmd, s string) [][]int32 {
	var out [][]int32
	for _, p := range strings.Split(s, "/") {
		out = append(out, ids(e.le.t, c, p))
	}
	return out
}

func (e *rulesEnv) idName(id UUID) string {
	if n, ok := e.idNames[id]; ok {
		return n
	}
	if id == (UUID{}) {
		return "none"
	}
	return id.String()
}

func (e *rulesEnv) topicResult(r TopicResult) string {
	if r.Err != nil {
		return fmt.Sprintf("%s: %v", r.Name, r.Err)
	}
	s := fmt.Sprintf("%s: id=%s", r.Name, e.idName(r.ID))
	if r.NumPartitions != 0 {
		s += fmt.Sprintf(" partitions=%d rf=%d", r.NumPartitions, r.ReplicationFactor)
	}
	return s
}

func (e *rulesEnv) partitionLine(topic string, p PartitionImage) string {
	s := fmt.Sprintf("%s-%d replicas=%v isr=%v leader=%d leader-epoch=%d partition-epoch=%d",
		topic, p.Partition, fmtIDs(p.Replicas), fmtIDs(p.ISR), p.Leader, p.LeaderEpoch, p.PartitionEpoch)
	for _, f := range []struct {
		name string
		ids  []int32
	}{{"elr", p.ELR}, {"last-known", p.LastKnownELR}, {"adding", p.AddingReplicas}, {"removing", p.RemovingReplicas}} {
		if len(f.ids) > 0 {
			s += fmt.Sprintf(" %s=%v", f.name, f.ids)
		}
	}
	return s
}

// recordLine is one record, with topics named (from the image, or from
// names: the topics the same result creates).
func (e *rulesEnv) recordLine(names map[UUID]string, r Record) string {
	topic := func(id UUID) string {
		if n, ok := names[id]; ok {
			return n
		}
		if t := e.le.im.TopicByID(id); t != nil {
			return t.Name
		}
		return e.idName(id)
	}
	switch r.Kind {
	case KindCluster:
		return fmt.Sprintf("cluster id=%s", r.Cluster.ClusterID)
	case KindTopic:
		return fmt.Sprintf("topic %s id=%s", r.Topic.Name, e.idName(r.Topic.ID))
	case KindPartition:
		p := r.Partition
		return "partition " + e.partitionLine(topic(p.TopicID), PartitionImage{Partition: p.Partition, Replicas: p.Replicas, ISR: p.ISR,
			ELR: p.ELR, LastKnownELR: p.LastKnownELR, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
	case KindRemoveTopic:
		return fmt.Sprintf("remove-topic %s", topic(r.RemoveTopic.ID))
	case KindConfig:
		cr := r.Config
		kind := map[ResourceType]string{ResourceTopic: "topic", ResourceBroker: "broker"}[cr.ResourceType]
		name := cr.Name
		if name == "" {
			name = "(cluster)"
		}
		if cr.Value == nil {
			return fmt.Sprintf("config %s %s %s deleted", kind, name, cr.Key)
		}
		return fmt.Sprintf("config %s %s %s=%s", kind, name, cr.Key, *cr.Value)
	case KindProducerIDs:
		p := r.ProducerIDs
		return fmt.Sprintf("producer-ids broker=%d block=[%d,%d)", p.BrokerID, p.NextBlockStart-p.BlockSize, p.NextBlockStart)
	case KindBrokerRegistration:
		b := r.BrokerRegistration
		return fmt.Sprintf("broker-registration %d fenced=%t rack=%q", b.BrokerID, b.Fenced, b.Rack)
	case KindBrokerFence:
		return fmt.Sprintf("broker-fence %d fenced=%t", r.BrokerFence.BrokerID, r.BrokerFence.Fenced)
	case KindBrokerLogDir:
		d := r.BrokerLogDir
		return fmt.Sprintf("broker-log-dir %d offline=%t reason=%q", d.BrokerID, d.Offline, d.Reason)
	case KindDataLoss:
		return ledgerString(*r.DataLoss)
	case KindClusterSecret:
		return fmt.Sprintf("cluster-secret %q", r.ClusterSecret.Secret)
	case KindScramCredential:
		sc := r.ScramCredential
		if sc.Credential == nil {
			return fmt.Sprintf("scram-credential %s %s deleted", sc.User, sc.Mechanism)
		}
		return fmt.Sprintf("scram-credential %s %s iterations=%d salt=%q", sc.User, sc.Mechanism, sc.Credential.Iterations, sc.Credential.Salt)
	case KindClientQuota:
		q := r.ClientQuota
		e, err := q.entity()
		if err != nil {
			return fmt.Sprintf("client-quota (bad entity: %v)", err)
		}
		if q.Remove {
			return fmt.Sprintf("client-quota %s %s removed", e, q.Key)
		}
		return fmt.Sprintf("client-quota %s %s=%v", e, q.Key, q.Value)
	case KindACL:
		if r.ACL.Delete {
			return "acl delete " + aclLine(r.ACL.Binding())
		}
		return "acl " + aclLine(r.ACL.Binding())
	}
	return fmt.Sprintf("%+v", r)
}
