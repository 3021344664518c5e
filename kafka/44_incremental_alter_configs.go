package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
)

// IncrementalAlterConfigs: v0-1
//
// Behavior:
// * SET and DELETE change one key each; keys not named keep their value.
//   Deleting a key that is not set is accepted and changes nothing.
// * APPEND and SUBTRACT apply to list-type settings only (cleanup.policy,
//   log.cleanup.policy): the items are added (those already present are
//   skipped) or removed, starting from the value the resource has now: its
//   dynamic value, else the value DescribeConfigs reports for it (for the
//   cluster-wide "" resource, the registry's default). Kafka starts from
//   the built-in default instead of a value set in the broker's file; wren
//   starts from what is in force. On another type: INVALID_CONFIG with
//   Kafka's message (topics: "Can't APPEND to key x because its type is
//   not LIST.", brokers: "Config value append is not allowed for config
//   key: x").
// * TOPIC resources: the resulting overrides are checked together by the
//   config registry; a refusal is INVALID_CONFIG with Kafka's message
//   ("Invalid value x for configuration y: ...").
// * BROKER resources: "" is the cluster-wide default, this node's id its
//   own layer, another name INVALID_REQUEST.
//   An admin client sends a broker's configs to that broker, which
//   forwards them to the controller: the controller takes the id a
//   forwarded request names, and a node does not forward a request that
//   names another broker (it refuses it, as Kafka's brokers do). Which settings may change, and
//   at which level, is the registry's Mode: a read-only setting, or a
//   per-broker one set cluster-wide, is refused. The broker config that
//   would result is checked whole; a refusal is INVALID_REQUEST with
//   Kafka's message (Kafka's code for broker config errors, KAFKA-13609).
// * A resource given twice (every copy), a key given twice in a resource,
//   a null value for an op other than DELETE, an unknown op and an
//   unknown resource type are INVALID_REQUEST, with Kafka's messages.
// * Keys wren does not apply yet, or reads only at start, are refused as
//   in AlterConfigs (INVALID_CONFIG with the reason).
// * ValidateOnly checks everything and writes nothing.
// * A change is durable in the metadata log before the response, so it
//   survives a restart; resources are applied one by one, in order.
//   Altered broker settings take effect at once (see AlterConfigs).
// * Authorization: as AlterConfigs: ALTER_CONFIGS on the topic or the
//   cluster.
//
// Not implemented:
// * BROKER_LOGGER, CLIENT_METRICS and GROUP resources.

func (s *Server) handleIncrementalAlterConfigs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	keys := make([]configResourceKey, len(r.Resources))
	for i, rr := range r.Resources {
		keys[i] = configResourceKey{rr.ResourceType, rr.ResourceName}
	}
	dup := duplicateResources(keys)
	az := s.authz(req)
	for i := range r.Resources {
		rr := &r.Resources[i]
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
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
			err = s.incrementalAlterResource(req.Session.Context(), rr, r.ValidateOnly, isForwarded(req))
		}
		res.ErrorCode, res.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return Respond(resp), nil
}

func (s *Server) incrementalAlterResource(ctx context.Context, rr *kmsg.IncrementalAlterConfigsRequestResource, validateOnly, forwarded bool) error {
	names := make([]string, len(rr.Configs))
	var nulls []string
	for i, c := range rr.Configs {
		names[i] = c.Name
		if c.Value == nil && c.Op != kmsg.IncrementalAlterConfigOpDelete {
			nulls = append(nulls, c.Name)
		}
	}
	if err := checkConfigKeys(names, nulls); err != nil {
		return err
	}
	for _, c := range rr.Configs {
		if c.Op < kmsg.IncrementalAlterConfigOpSet || c.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return fmt.Errorf("%w: Unknown operations type %d", kerr.InvalidRequest, int8(c.Op))
		}
	}
	// The image is read per resource: an earlier resource of the same
	// request may have changed it.
	im := s.node().Metadata.Image()
	a, err := s.configResource(im, rr.ResourceType, rr.ResourceName, forwarded)
	if err != nil {
		return err
	}
	for _, c := range rr.Configs {
		op, err := s.resolveIncremental(im, a, c)
		if err != nil {
			return err
		}
		a.ops = append(a.ops, op)
	}
	return s.alterConfigs(ctx, im, a, validateOnly)
}

// resolveIncremental turns one op into a set or a delete; APPEND and
// SUBTRACT become a set of the list they make from the current value.
func (s *Server) resolveIncremental(im *cluster.Image, a configAlter, c kmsg.IncrementalAlterConfigsRequestResourceConfig) (cluster.ConfigOp, error) {
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		return cluster.ConfigOp{Key: c.Name, Value: c.Value}, nil
	case kmsg.IncrementalAlterConfigOpDelete:
		return cluster.ConfigOp{Key: c.Name}, nil
	}
	current, err := s.currentListValue(im, a, c)
	if err != nil {
		return cluster.ConfigOp{}, err
	}
	items := splitListItems(current)
	for _, item := range splitListItems(*c.Value) {
		if c.Op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(items, item) {
				items = append(items, item)
			}
		} else {
			items = slices.DeleteFunc(items, func(x string) bool { return x == item })
		}
	}
	v := strings.Join(items, ",")
	return cluster.ConfigOp{Key: c.Name, Value: &v}, nil
}

// currentListValue is the value APPEND or SUBTRACT starts from, after
// checking that the setting is a list.
func (s *Server) currentListValue(im *cluster.Image, a configAlter, c kmsg.IncrementalAlterConfigsRequestResourceConfig) (string, error) {
	n := s.node()
	verb := "APPEND"
	if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
		verb = "SUBTRACT"
	}
	if err := checkListSetting(a.resourceType, c.Name, verb); err != nil {
		return "", err
	}
	if v, ok := a.current[c.Name]; ok {
		return v, nil
	}
	dyn := dynamicConfigs(n, im)
	var described []config.Described
	var err error
	switch {
	case a.resourceType == cluster.ResourceTopic:
		described, err = n.Config.DescribeTopic(a.current, dyn)
	case a.perBroker:
		described, err = n.Config.DescribeBroker(dyn)
	default:
		// The cluster-wide layer has no value of its own: start from the
		// built-in default, not from this node's file.
		e, _ := config.Lookup(c.Name)
		if l, ok := e.Default.([]string); ok {
			return strings.Join(l, ","), nil
		}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
	}
	for _, d := range described {
		if d.Name == c.Name && d.Value != nil {
			return *d.Value, nil
		}
	}
	return "", nil
}

// checkListSetting refuses APPEND and SUBTRACT on an unknown setting or
// one that is not a list, with the messages of Kafka's controller (topics)
// and ConfigAdminManager (brokers).
func checkListSetting(rt cluster.ResourceType, name, verb string) error {
	if rt == cluster.ResourceTopic {
		t, ok := config.LookupTopic(name)
		if !ok {
			return fmt.Errorf("%w: Unknown topic config name: %s", kerr.InvalidConfig, name)
		}
		if t.Type != config.TypeList {
			return fmt.Errorf("%w: Can't %s to key %s because its type is not LIST.", kerr.InvalidConfig, verb, name)
		}
		return nil
	}
	e, ok := config.Lookup(name)
	if !ok {
		return fmt.Errorf("%w: Unknown config name: %s", kerr.InvalidConfig, name)
	}
	if e.Type != config.TypeList {
		return fmt.Errorf("%w: Config value %s is not allowed for config key: %s", kerr.InvalidConfig, strings.ToLower(verb), name)
	}
	return nil
}

// splitListItems splits a list setting's text into its items, dropping
// blanks.
func splitListItems(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
