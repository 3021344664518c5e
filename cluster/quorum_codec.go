package cluster

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Messages between a broker and the controller, in APIKeyApp bodies
// (JSON: they are small and rare). Part of the wire format.
type appMessage struct {
	Kind string `json:"kind"`
	// heartbeat: the broker's registration.
	Registration *BrokerRegistrationRecord `json:"registration,omitempty"`
	// heartbeat: the broker is in a controlled shutdown.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// heartbeat: the broker has not caught up with the metadata log
	// since it started (absent from older nodes: caught up).
	CatchingUp bool `json:"catching_up,omitempty"`
	// heartbeat: the broker's data directory was shut down cleanly
	// before this incarnation (Registration.IncarnationID) started, and
	// the epoch of this incarnation's registration once its image shows
	// it (absent before). Older nodes send neither, nor an incarnation.
	CleanShutdown bool   `json:"clean_shutdown,omitempty"`
	BrokerEpoch   uint64 `json:"broker_epoch,omitempty"`
	// heartbeat: the broker's log dir, when it takes no writes (absent
	// while it does, and from older nodes).
	LogDir *BrokerLogDir `json:"log_dir,omitempty"`
	// alter_isr request (its answer carries the partition's state).
	AlterISR *alterISRMessage `json:"alter_isr,omitempty"`
	// allocate_producer_ids request and answer.
	ID         uint64 `json:"id,omitempty"`
	First      int64  `json:"first,omitempty"`
	ErrorCode  int16  `json:"error_code,omitempty"`
	ErrMessage string `json:"error_message,omitempty"`
	// kafka_request: a Kafka request forwarded to the controller
	// (forward.go); its answer carries the response body and the
	// controller's image offset after it.
	APIKey     int16  `json:"api_key,omitempty"`
	APIVersion int16  `json:"api_version,omitempty"`
	Body       []byte `json:"body,omitempty"`
	Offset     uint64 `json:"offset,omitempty"`
	// kafka_request: the client's principal and IP address, which the
	// controller authorizes the request with (absent from older nodes).
	Principal  string `json:"principal,omitempty"`
	ClientHost string `json:"client_host,omitempty"`
}

const (
	appHeartbeat          = "heartbeat"
	appAllocateProducerID = "allocate_producer_ids"
	appAlterISR           = "alter_isr"
	appControlledShutdown = "controlled_shutdown"
	appAnswer             = "answer"
	appKafkaRequest       = "kafka_request"
)

// alterISRMessage is a partition leader's AlterPartition, and in the
// answer the partition's state after it.
type alterISRMessage struct {
	TopicID        UUID    `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

type forwardAnswer struct {
	first    int64
	alterISR *alterISRMessage
	body     []byte
	offset   uint64
	err      error
}

// maxAppBytes bounds an app body before it is decoded: a forwarded Kafka
// request (at most 1 MiB, kafka's smallRequestBytes) or its answer, in
// base64.
const maxAppBytes = 2 << 20

// maxOriginBytes bounds a forwarded request's principal and client host
// (a distinguished name is rarely over a few hundred bytes).
const maxOriginBytes = 4096

// decodeApp reads an APIKeyApp body.
func decodeApp(body []byte) (appMessage, error) {
	var m appMessage
	if len(body) > maxAppBytes {
		return m, fmt.Errorf("cluster: app message of %d bytes, limit %d", len(body), maxAppBytes)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("cluster: app message: %w", err)
	}
	switch m.Kind {
	case appHeartbeat:
		if m.Registration == nil || len(m.Registration.Listeners) > 16 {
			return m, errors.New("cluster: heartbeat without a registration, or with too many listeners")
		}
		if d := m.LogDir; d != nil && (len(d.Dir) > 4096 || len(d.Reason) > 64 || len(d.Detail) > 1024) {
			return m, errors.New("cluster: heartbeat with an oversized log dir state")
		}
	case appAlterISR:
		if m.AlterISR == nil || len(m.AlterISR.ISR) > 64 {
			return m, errors.New("cluster: alter_isr without a request, or with too many replicas")
		}
	case appKafkaRequest:
		if m.Body == nil {
			return m, errors.New("cluster: kafka_request without a body")
		}
		if len(m.Principal) > maxOriginBytes || len(m.ClientHost) > maxOriginBytes {
			return m, errors.New("cluster: kafka_request with an oversized principal or client host")
		}
	case appAllocateProducerID, appAnswer, appControlledShutdown, appNodeFacts:
	default:
		return m, fmt.Errorf("cluster: app message kind %q", m.Kind)
	}
	return m, nil
}

// errorCode is the Kafka error code an error carries, else
// UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// decodeEntry reads the records of one metadata-log entry: a JSON array.
func decodeEntry(payload []byte) ([]Record, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(payload, &raws); err != nil {
		return nil, fmt.Errorf("cluster: bad metadata entry: %w", err)
	}
	out := make([]Record, 0, len(raws))
	for _, raw := range raws {
		r, err := decodeRecord(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
