package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
)

// errorCode maps an error from the broker's packages to the Kafka error
// code a response carries. Errors that wrap a *kerr.Error carry their code;
// the engine's and engine/batch's sentinels map as Kafka maps the
// equivalent exceptions; anything else is UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	switch {
	case errors.Is(err, engine.ErrLogDirFailed), errors.Is(err, engine.ErrPartitionDamaged),
		errors.Is(err, engine.ErrLogDirFull), errors.Is(err, engine.ErrNoSpace),
		errors.Is(err, engine.ErrTooManyOpenFiles):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, engine.ErrRecordTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, engine.ErrInvalidTopicPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, engine.ErrClosed), errors.Is(err, engine.ErrFencedLeaderEpoch):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, batch.ErrCorrupt), errors.Is(err, batch.ErrCRC), errors.Is(err, batch.ErrIncomplete):
		return kerr.CorruptMessage.Code
	case errors.Is(err, batch.ErrUnsupportedMagic), errors.Is(err, batch.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, batch.ErrUnknownCodec):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, batch.ErrTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, batch.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the text for a response's error message field, or nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	return &m
}
