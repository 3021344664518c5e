package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
)

// AlterConfigs: v0-2
//
// Behavior:
// * Replaces every dynamic config of a resource: keys not given are
//   deleted, as the legacy API does (IncrementalAlterConfigs changes only
//   the keys it names).
// * TOPIC resources: the resulting overrides are checked together by the
//   config registry (names, values, min.compaction.lag.ms <=
//   max.compaction.lag.ms); a refusal is INVALID_CONFIG with Kafka's
//   message ("Invalid value x for configuration y: ...", "Unknown topic
//   config name: x"). A missing topic is UNKNOWN_TOPIC_OR_PARTITION.
// * BROKER resources: "" is the cluster-wide default, this node's id its
//   own layer; another name is INVALID_REQUEST.
//   An admin client sends a broker's configs to that broker, which
//   forwards them to the controller: the controller takes the id a
//   forwarded request names, and a node does not forward a request that
//   names another broker (it refuses it, as Kafka's brokers do). The broker config that
//   would result is checked whole (read-only settings, per-broker settings
//   set cluster-wide, values, cross-setting checks); a refusal is
//   INVALID_REQUEST with Kafka's message, since Kafka answers broker
//   config errors with INVALID_REQUEST, not INVALID_CONFIG (KAFKA-13609).
// * A resource given twice (every copy), a key given twice in a resource,
//   a null value and an unknown resource type are INVALID_REQUEST, with
//   Kafka's messages.
// * Setting a key wren does not apply yet (config.NotInEffect), or, on a
//   BROKER resource, one wren reads only at start, or on one broker's own
//   layer, one only the controller reads cluster-wide
//   (unclean.leader.election.enable), is INVALID_CONFIG with a message
//   that says so: a stored value that changes nothing would mislead.
//   Deleting such a key is allowed. CreateTopics refuses the same keys the
//   same way (checkSettable).
// * A listener's key and trust stores (listener.name.NAME.ssl.keystore.*,
//   ssl.key.password, ssl.truststore.*: Kafka's dynamic keystore update)
//   may be set on one broker's own layer only; the stores they name are
//   loaded first, and ones that do not load are INVALID_CONFIG, the
//   listener keeping its certificate. Once committed, the listener's new
//   handshakes get the new certificate; open connections stay up. The
//   files are the named broker's: it loads them before forwarding the
//   change (checkStoresBeforeForward), and the controller does not.
// * ValidateOnly checks everything and writes nothing.
// * A change is durable in the metadata log before the response, so it
//   survives a restart; resources are applied one by one, in order.
// * Altered broker settings take effect at once: the broker layers
//   (cluster-wide default, then this node's) feed every topic's effective
//   configs when the next metadata image is applied.
// * Authorization: ALTER_CONFIGS on the topic, or on the cluster for a
//   broker's configs; else TOPIC_ or CLUSTER_AUTHORIZATION_FAILED on that
//   resource, which is not changed.

func (s *Server) handleAlterConfigs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	keys := make([]configResourceKey, len(r.Resources))
	for i, rr := range r.Resources {
		keys[i] = configResourceKey{rr.ResourceType, rr.ResourceName}
	}
	dup := duplicateResources(keys)
	az := s.authz(req)
	for i := range r.Resources {
		rr := &r.Resources[i]
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if code := az.allowConfig(kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); code != 0 && !dup[i] {
			res.ErrorCode = code
			resp.Resources = append(resp.Resources, res)
			continue
		}
		if dup[i] {
			err = errDuplicateResource
		} else {
			err = s.alterConfigsResource(req.Session.Context(), rr, r.ValidateOnly, isForwarded(req))
		}
		res.ErrorCode, res.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return Respond(resp), nil
}

func (s *Server) alterConfigsResource(ctx context.Context, rr *kmsg.AlterConfigsRequestResource, validateOnly, forwarded bool) error {
	names := make([]string, len(rr.Configs))
	var nulls []string
	ops := make([]cluster.ConfigOp, len(rr.Configs))
	for i, c := range rr.Configs {
		names[i] = c.Name
		if c.Value == nil {
			nulls = append(nulls, c.Name)
		}
		ops[i] = cluster.ConfigOp{Key: c.Name, Value: c.Value}
	}
	if err := checkConfigKeys(names, nulls); err != nil {
		return err
	}
	im := s.node().Metadata.Image()
	a, err := s.configResource(im, rr.ResourceType, rr.ResourceName, forwarded)
	if err != nil {
		return err
	}
	a.ops, a.replace = ops, true
	return s.alterConfigs(ctx, im, a, validateOnly)
}

// checkSettable refuses a key that a run-time request may not set
// (config.CheckAlter: not in effect, read only at start, cluster-wide
// only) with INVALID_CONFIG and the registry's message. AlterConfigs,
// IncrementalAlterConfigs and CreateTopics' configs all check here, so a
// key is refused with the same code and words whichever request sets it.
func checkSettable(key string, target config.AlterTarget) error {
	if err := config.CheckAlter(key, target); err != nil {
		return fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
	}
	return nil
}

// configResourceKey names a config resource of a request.
type configResourceKey struct {
	resourceType kmsg.ConfigResourceType
	name         string
}

var errDuplicateResource = fmt.Errorf("%w: Each resource must appear at most once.", kerr.InvalidRequest)

// duplicateResources marks every resource that appears more than once in a
// request: Kafka refuses all of its copies.
func duplicateResources(keys []configResourceKey) []bool {
	count := make(map[configResourceKey]int, len(keys))
	for _, k := range keys {
		count[k]++
	}
	dup := make([]bool, len(keys))
	for i, k := range keys {
		dup[i] = count[k] > 1
	}
	return dup
}

// checkConfigKeys refuses, as Kafka's ConfigAdminManager does, a resource
// that names a key twice or gives null where a value is needed.
func checkConfigKeys(names, nulls []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
		}
		seen[n] = true
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
	}
	return nil
}

// configAlter is one resource's change, resolved to the keys it sets
// (Value non-nil) and deletes, as Controller.AlterConfigs takes it.
type configAlter struct {
	resourceType cluster.ResourceType
	name         string
	// perBroker is a BROKER resource named by this node's id; false for
	// the cluster-wide default ("").
	perBroker bool
	// current are the resource's dynamic configs now: the topic's
	// overrides, or the broker layer the resource names.
	current map[string]string
	ops     []cluster.ConfigOp
	// replace deletes every current key that ops do not set
	// (AlterConfigs).
	replace bool
}

// configResource checks the resource an alter request names and returns
// it with its current dynamic configs. A BROKER resource names this node
// or the cluster-wide default; a request another node forwarded may name
// that node (or any broker), since the admin client sends a broker's
// configs to that broker, which forwards them here to the controller.
func (s *Server) configResource(im *cluster.Image, rt kmsg.ConfigResourceType, name string, forwarded bool) (configAlter, error) {
	n := s.node()
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		t := im.Topic(name)
		if t == nil {
			return configAlter{}, fmt.Errorf("%w: The topic '%s' does not exist.", kerr.UnknownTopicOrPartition, name)
		}
		return configAlter{resourceType: cluster.ResourceTopic, name: name, current: t.Configs}, nil
	case kmsg.ConfigResourceTypeBroker:
		self := n.Config.NodeID
		if id, err := strconv.ParseInt(name, 10, 32); err == nil && forwarded {
			self = int32(id)
		}
		perBroker, err := brokerResource(name, self, false)
		if err != nil {
			return configAlter{}, err
		}
		return configAlter{resourceType: cluster.ResourceBroker, name: name, perBroker: perBroker,
			current: im.BrokerConfigs(name)}, nil
	}
	return configAlter{}, fmt.Errorf("%w: Unknown resource type %d", kerr.InvalidRequest, int8(rt))
}

// alterConfigs checks a resolved change as a whole, as the resource would
// be after it, and commits it unless validateOnly.
func (s *Server) alterConfigs(ctx context.Context, im *cluster.Image, a configAlter, validateOnly bool) error {
	n := s.node()
	// A setting wren ignores, or reads only at start, is refused rather
	// than stored without effect. Deletes pass: they let an operator
	// remove a value stored before wren refused it.
	target := config.AlterTopic
	if a.resourceType == cluster.ResourceBroker {
		target = config.AlterClusterDefault
		if a.perBroker {
			target = config.AlterBroker
		}
	}
	for _, op := range a.ops {
		if op.Value == nil {
			continue
		}
		if err := checkSettable(op.Key, target); err != nil {
			return err
		}
	}
	final := make(map[string]string, len(a.current)+len(a.ops))
	if !a.replace {
		maps.Copy(final, a.current)
	}
	for _, op := range a.ops {
		if op.Value == nil {
			delete(final, op.Key)
		} else {
			final[op.Key] = *op.Value
		}
	}
	dyn := dynamicConfigs(n, im)
	switch a.resourceType {
	case cluster.ResourceTopic:
		if _, err := n.Config.Topic(final, dyn); err != nil {
			return fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
		}
	case cluster.ResourceBroker:
		next := *dyn
		if a.perBroker {
			next.Broker = final
			// Forwarded for another broker: its key stores are its files,
			// checked there before it forwarded (checkStoresBeforeForward).
			next.StoresElsewhere = a.name != strconv.Itoa(int(n.Config.NodeID))
		} else {
			next.ClusterDefault = final
		}
		keys := make([]string, 0, len(a.ops))
		for _, op := range a.ops {
			keys = append(keys, op.Key)
		}
		if a.replace {
			keys = slices.AppendSeq(keys, maps.Keys(a.current))
		}
		resource := a.name
		if !a.perBroker {
			resource = ""
		}
		// A run-time link (uplink.NAME.KEY) is checked as a whole, as a
		// file's [uplink.NAME] table is; its error names the key.
		if err := config.CheckUplinkChange(resource, keys, final); err != nil {
			return fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
		}
		if _, err := n.Config.WithDynamic(&next); err != nil {
			if errors.Is(err, config.ErrInvalidKeystore) {
				// Kafka refuses a keystore that does not load with
				// INVALID_CONFIG; the listener keeps its certificate.
				return fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
			}
			return fmt.Errorf("%w: %w", kerr.InvalidRequest, err)
		}
	}
	// Deleting a key that is not set changes nothing (Kafka accepts it,
	// unknown names included); the controller need not see it.
	ops := slices.DeleteFunc(slices.Clone(a.ops), func(op cluster.ConfigOp) bool {
		_, set := a.current[op.Key]
		return op.Value == nil && !set
	})
	if len(ops) == 0 && (!a.replace || len(a.current) == 0) {
		return nil
	}
	return n.Controller.AlterConfigs(ctx, a.resourceType, a.name, ops, a.replace, validateOnly)
}

// checkStoresBeforeForward loads, on the broker a config change names,
// the listener key and trust stores (listener.name.NAME.ssl.*) it sets
// on this broker's own layer, before the change goes to the controller:
// they are this node's files, which the controller cannot read. When one
// does not load, the request is answered here: that resource
// INVALID_CONFIG, the others INVALID_REQUEST, unapplied (a client sends
// such a change alone, as kafka-configs does). ok is false when the
// request may go on.
func (s *Server) checkStoresBeforeForward(req *Request) (resp kmsg.Response, ok bool) {
	n := s.node()
	self := strconv.Itoa(int(n.Config.NodeID))
	type change struct {
		name    string
		replace bool
		ops     []cluster.ConfigOp
	}
	var changes []change
	switch r := req.Body.(type) {
	case *kmsg.AlterConfigsRequest:
		for _, rr := range r.Resources {
			c := change{name: rr.ResourceName, replace: true}
			if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
				for _, cfg := range rr.Configs {
					c.ops = append(c.ops, cluster.ConfigOp{Key: cfg.Name, Value: cfg.Value})
				}
			}
			changes = append(changes, c)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range r.Resources {
			c := change{name: rr.ResourceName}
			if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
				for _, cfg := range rr.Configs {
					switch cfg.Op {
					case kmsg.IncrementalAlterConfigOpSet:
						c.ops = append(c.ops, cluster.ConfigOp{Key: cfg.Name, Value: cfg.Value})
					case kmsg.IncrementalAlterConfigOpDelete:
						c.ops = append(c.ops, cluster.ConfigOp{Key: cfg.Name})
					}
				}
			}
			changes = append(changes, c)
		}
	default:
		return nil, false
	}
	errs := make([]error, len(changes))
	failed := false
	im := n.Metadata.Image()
	for i, c := range changes {
		if c.name != self || !slices.ContainsFunc(c.ops, func(op cluster.ConfigOp) bool { return config.IsListenerKey(op.Key) && op.Value != nil }) {
			continue
		}
		layer := map[string]string{}
		if !c.replace {
			for k, v := range im.BrokerConfigs(self) {
				if config.IsListenerKey(k) {
					layer[k] = v
				}
			}
		}
		for _, op := range c.ops {
			switch {
			case !config.IsListenerKey(op.Key):
			case op.Value == nil:
				delete(layer, op.Key)
			default:
				layer[op.Key] = *op.Value
			}
		}
		if _, err := n.Config.WithDynamic(&config.Dynamic{Broker: layer}); errors.Is(err, config.ErrInvalidKeystore) {
			errs[i], failed = fmt.Errorf("%w: %w", kerr.InvalidConfig, err), true
		}
	}
	if !failed {
		return nil, false
	}
	notApplied := fmt.Errorf("%w: not applied: another resource of the request names a key store that does not load", kerr.InvalidRequest)
	switch r := req.Body.(type) {
	case *kmsg.AlterConfigsRequest:
		out := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for i, rr := range r.Resources {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			err := cmp.Or(errs[i], notApplied)
			res.ErrorCode, res.ErrorMessage = errorCode(err), kafkaMessage(err)
			out.Resources = append(out.Resources, res)
		}
		return out, true
	case *kmsg.IncrementalAlterConfigsRequest:
		out := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for i, rr := range r.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			err := cmp.Or(errs[i], notApplied)
			res.ErrorCode, res.ErrorMessage = errorCode(err), kafkaMessage(err)
			out.Resources = append(out.Resources, res)
		}
		return out, true
	}
	return nil, false
}
