package kafka

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
)

// DescribeConfigs: v1-4
//
// Behavior:
// * TOPIC resources: every topic config with its effective value and
//   source: the topic's override (DYNAMIC_TOPIC_CONFIG), else its broker
//   synonyms altered for this broker (DYNAMIC_BROKER_CONFIG) or cluster-wide
//   (DYNAMIC_DEFAULT_BROKER_CONFIG) or set in the file
//   (STATIC_BROKER_CONFIG), else the default (DEFAULT_CONFIG). Never
//   read-only. UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist,
//   INVALID_TOPIC_EXCEPTION for an illegal name.
// * BROKER resources: this node's id describes every broker setting, with
//   read-only set for those that cannot change at run time; "" describes
//   only the settings altered cluster-wide, as Kafka does. Another id, or a
//   name that is not a number, gets INVALID_REQUEST with Kafka's message.
// * ConfigNames, when not null, keeps only the settings named; unknown names
//   are left out silently.
// * Synonyms (every place the value could come from, highest precedence
//   first) only with IncludeSynonyms; documentation only with
//   IncludeDocumentation (v3+); ConfigType (v3+) from the registry.
// * Nothing is sensitive: wren has no password-type settings.
// * Other resource types get INVALID_REQUEST.
// * One response holds at most maxDescribedConfigs configs; a resource
//   that would go beyond gets INVALID_REQUEST instead. Each resource of a
//   few request bytes lists dozens of settings (about a hundred for a
//   broker, with documentation if asked), so without a cap a 1 MiB request
//   could ask for a response of gigabytes. 16384 is over 700 topics.
// * Authorization: DESCRIBE_CONFIGS on the topic, or on the cluster for a
//   broker's and a broker logger's configs; else TOPIC_ or
//   CLUSTER_AUTHORIZATION_FAILED on that resource.
//
// Not implemented:
// * BROKER_LOGGER, CLIENT_METRICS and GROUP resources.

// maxDescribedConfigs bounds the configs of one response: about 4 MiB
// with synonyms and documentation.
const maxDescribedConfigs = 16384

func (s *Server) handleDescribeConfigs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	n := s.node()
	im := n.Metadata.Image()
	dyn := dynamicConfigs(n, im)
	synonyms := r.IncludeSynonyms
	docs := r.Version >= 3 && r.IncludeDocumentation
	budget := maxDescribedConfigs
	az := s.authz(req)
	for i := range r.Resources {
		rr := &r.Resources[i]
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if code := az.allowConfig(kmsg.ACLOperationDescribeConfigs, rr.ResourceType, rr.ResourceName); code != 0 {
			res.ErrorCode = code
			resp.Resources = append(resp.Resources, res)
			continue
		}
		described, err := describeResource(n, im, dyn, rr)
		if err == nil {
			described = filterConfigs(described, rr.ConfigNames)
			if len(described) > budget {
				err = fmt.Errorf("%w: the response would hold more than %d configs; describe fewer resources per request", kerr.InvalidRequest, maxDescribedConfigs)
			}
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), kafkaMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		budget -= len(described)
		for _, d := range described {
			res.Configs = append(res.Configs, describedConfig(d, synonyms, docs))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return Respond(resp), nil
}

// describeResource lists the settings of one resource. Its errors wrap the
// Kafka error the resource gets.
func describeResource(n *Node, im *cluster.Image, dyn *config.Dynamic, rr *kmsg.DescribeConfigsRequestResource) ([]config.Described, error) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := cluster.ValidateTopicName(rr.ResourceName); err != nil {
			return nil, err
		}
		t := im.Topic(rr.ResourceName)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		return n.Config.DescribeTopic(t.Configs, dyn)
	case kmsg.ConfigResourceTypeBroker:
		perBroker, err := brokerResource(rr.ResourceName, n.Config.NodeID, true)
		if err != nil {
			return nil, err
		}
		if perBroker {
			return n.Config.DescribeBroker(dyn)
		}
		// The cluster-wide resource shows only what was altered
		// cluster-wide, as Kafka's ConfigHelper does; this node's own
		// layer is not part of it.
		cd := dyn.ClusterDefault
		all, err := n.Config.DescribeBroker(&config.Dynamic{ClusterDefault: cd})
		if err != nil {
			return nil, err
		}
		out := all[:0]
		for _, d := range all {
			if _, ok := cd[d.Name]; ok {
				out = append(out, d)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: Unsupported resource type: %s", kerr.InvalidRequest, rr.ResourceType)
}

// filterConfigs keeps the settings named, all of them when names is null.
func filterConfigs(described []config.Described, names []string) []config.Described {
	if names == nil {
		return described
	}
	keep := make(map[string]bool, len(names))
	for _, name := range names {
		keep[name] = true
	}
	return slices.DeleteFunc(described, func(d config.Described) bool { return !keep[d.Name] })
}

// describedConfig is one row of the response.
func describedConfig(d config.Described, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = d.Name
	c.Value = d.Value
	c.ReadOnly = d.ReadOnly
	c.IsSensitive = d.Sensitive
	c.IsDefault = d.Source == config.SourceDefault
	// The registry's source and type numbers are the wire's.
	c.Source = kmsg.ConfigSource(d.Source)
	c.ConfigType = kmsg.ConfigType(d.Type)
	if docs {
		c.Documentation = kmsg.StringPtr(d.Doc)
	}
	if synonyms {
		for _, syn := range d.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = syn.Name, kmsg.StringPtr(syn.Value), kmsg.ConfigSource(syn.Source)
			if d.Sensitive {
				cs.Value = nil
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	return c
}

// dynamicConfigs is the metadata image's run-time broker layer as the
// config registry reads it: this node's own (resource name = its node id)
// and the cluster-wide default (resource name "").
func dynamicConfigs(n *Node, im *cluster.Image) *config.Dynamic {
	return &config.Dynamic{
		Broker:         im.BrokerConfigs(strconv.Itoa(int(n.Config.NodeID))),
		ClusterDefault: im.BrokerConfigs(""),
	}
}

// brokerResource checks the name of a BROKER config resource: "" is the
// cluster-wide default (perBroker false), this node's id its own layer.
// Anything else is INVALID_REQUEST with Kafka's messages, which differ
// between describing (ConfigHelper) and altering (ConfigAdminManager).
func brokerResource(name string, nodeID int32, describe bool) (perBroker bool, err error) {
	if name == "" {
		return false, nil
	}
	id, convErr := strconv.ParseInt(name, 10, 32)
	switch {
	case convErr != nil && describe:
		return false, fmt.Errorf("%w: Broker id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	case convErr != nil:
		return false, fmt.Errorf("%w: Node id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	case int32(id) != nodeID && describe:
		return false, fmt.Errorf("%w: Unexpected broker id, expected %d or empty string, but received %s", kerr.InvalidRequest, nodeID, name)
	case int32(id) != nodeID:
		return false, fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", kerr.InvalidRequest, nodeID, name)
	}
	return true, nil
}

// kafkaMessage is the error message a response carries, in Kafka's words
// where the error has them: a refused config's message as the registry
// wrote it, else the detail after the Kafka error's name when the error
// wraps one ("%w: detail"), else the Kafka error's own description.
func kafkaMessage(err error) *string {
	if err == nil {
		return nil
	}
	var ae *config.AlterError
	if errors.As(err, &ae) {
		return &ae.Message
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		msg := err.Error()
		if msg == ke.Error() {
			return &ke.Description
		}
		if detail, ok := strings.CutPrefix(msg, ke.Error()+": "); ok {
			return &detail
		}
	}
	return errorMessage(err)
}
