package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// DeleteTopics: v1-6
//
// Behavior:
// * Topics are named by name (v1-5) or, in v6, by name or by id: exactly
//   one of the two per entry, else INVALID_REQUEST.
// * As Kafka's controller: a name or id given twice is INVALID_REQUEST
//   ("Duplicate topic name.", "Duplicate topic id."), and so is a name and
//   the id it resolves to given together; an unknown name is
//   UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID.
// * Internal topics (__consumer_offsets, __transaction_state) are refused
//   with TOPIC_AUTHORIZATION_FAILED whatever the ACLs. Kafka leaves them
//   to its authorizer (a principal granted DELETE on them may) and its
//   tools refuse them; in wren nobody may: they hold the brokers' own
//   state.
// * A topic is deleted once its removal is durable in the metadata log;
//   its partition logs are deleted before the response leaves.
// * Results keep the request's order. (Kafka shuffles them so that an
//   unauthorized principal cannot tell which topics exist.)
// * Authorization: DELETE on each topic, or TOPIC_AUTHORIZATION_FAILED,
//   whether it exists or not.
//
// Not implemented:
// * TimeoutMillis is ignored: deletion is synchronous.
// * delete.topic.enable: deletion is always allowed.

func (s *Server) handleDeleteTopics(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	entries := r.Topics
	if r.Version < 6 {
		entries = make([]kmsg.DeleteTopicsRequestTopic, len(r.TopicNames))
		for i := range r.TopicNames {
			entries[i].Topic = &r.TopicNames[i]
		}
	}
	c := s.node().Controller
	targets := resolveDeleteTopics(s.node().Metadata.Image(), entries)
	az := s.authz(req)
	for i := range targets {
		// As Kafka: a name the principal may not DELETE is refused
		// whether the topic exists or not.
		t := &targets[i]
		if t.name != "" && (t.err == nil || t.err == kerr.UnknownTopicOrPartition) &&
			!az.allow(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, t.name) {
			t.err = kerr.TopicAuthorizationFailed
		}
	}
	var names []string
	var at []int
	for i, t := range targets {
		if t.err == nil {
			names = append(names, t.name)
			at = append(at, i)
		}
	}
	if len(names) > 0 {
		results, err := c.DeleteTopics(req.Session.Context(), names)
		if err != nil {
			return nil, err
		}
		for j, res := range results {
			targets[at[j]].err = res.Err
		}
	}
	for _, t := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		if t.name != "" {
			rt.Topic = kmsg.StringPtr(t.name)
		}
		rt.TopicID = t.id
		rt.ErrorCode, rt.ErrorMessage = errorCode(t.err), kafkaMessage(t.err)
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}

// deleteTarget is one entry of a DeleteTopics request, resolved against
// the metadata image.
type deleteTarget struct {
	name string // "" when the entry gave an id that does not resolve
	id   [16]byte
	err  error // why it will not be deleted, or the deletion's outcome
}

// resolveDeleteTopics resolves each entry to a topic, or to the error it
// gets. The names of the targets without error are distinct.
func resolveDeleteTopics(im *cluster.Image, entries []kmsg.DeleteTopicsRequestTopic) []deleteTarget {
	names := make(map[string]int, len(entries))
	ids := make(map[[16]byte]int, len(entries))
	for _, e := range entries {
		switch {
		case e.Topic != nil && e.TopicID == [16]byte{}:
			names[*e.Topic]++
		case e.Topic == nil && e.TopicID != [16]byte{}:
			ids[e.TopicID]++
		}
	}
	out := make([]deleteTarget, len(entries))
	for i, e := range entries {
		t := &out[i]
		switch {
		case e.Topic == nil && e.TopicID == [16]byte{}:
			t.err = fmt.Errorf("%w: Neither topic name nor id were specified.", kerr.InvalidRequest)
		case e.Topic != nil && e.TopicID != [16]byte{}:
			t.name, t.id = *e.Topic, e.TopicID
			t.err = fmt.Errorf("%w: You may not specify both topic name and topic id.", kerr.InvalidRequest)
		case e.Topic != nil:
			t.name = *e.Topic
			topic := im.Topic(t.name)
			switch {
			case names[t.name] > 1:
				t.err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
			case topic == nil:
				t.err = kerr.UnknownTopicOrPartition
			case ids[topic.ID] > 0:
				t.err = fmt.Errorf("%w: The provided topic name maps to an ID that was already supplied.", kerr.InvalidRequest)
			default:
				t.id, t.err = topic.ID, checkDeletable(t.name)
			}
		default:
			t.id = e.TopicID
			topic := im.TopicByID(cluster.UUID(e.TopicID))
			switch {
			case ids[t.id] > 1:
				t.err = fmt.Errorf("%w: Duplicate topic id.", kerr.InvalidRequest)
			case topic == nil:
				t.err = kerr.UnknownTopicID
			case names[topic.Name] > 0:
				t.name = topic.Name
				t.err = fmt.Errorf("%w: The provided topic name maps to an ID that was already supplied.", kerr.InvalidRequest)
			default:
				t.name, t.err = topic.Name, checkDeletable(topic.Name)
			}
		}
	}
	return out
}

// checkDeletable refuses the internal topics (see the header).
func checkDeletable(name string) error {
	if cluster.IsInternalTopic(name) {
		return fmt.Errorf("%w: %s is an internal topic and cannot be deleted", kerr.TopicAuthorizationFailed, name)
	}
	return nil
}
