package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/wire"
)

// Response is the answer to one request. At most one field is set; the
// zero Response sends nothing (Produce with acks=0).
type Response struct {
	// Msg is encoded with kmsg. Its Key and version must be the request's.
	Msg kmsg.Response
	// Spliced is a response body assembled from byte and file chunks
	// (Fetch, to sendfile record batches straight from segments).
	Spliced *SplicedResponse
	// Sent, if set with Spliced, is called just before the response is
	// written: not when it is dropped, nor when a quota throttle replaced
	// it with an empty one (a throttled Fetch). Fetch counts its bytes
	// out there.
	Sent func()
}

// Pending completes a response later, on the connection's writer goroutine,
// in request order. A Produce handler appends synchronously and returns a
// Pending that waits for the fdatasync, so the next pipelined request can
// append meanwhile and one fdatasync covers both, while the responses still
// leave in order.
//
// Contract:
//   - The writer calls every non-nil Pending exactly once, in request order.
//   - ctx is canceled when the connection or the server closes; the Pending
//     must then return promptly (its response is dropped). Close waits for
//     it.
//   - It runs concurrently with later handlers of the same connection, so
//     it must not touch the Session; capture what it needs.
//   - A non-nil error logs it and closes the connection (a Go error is never
//     a Kafka error code: those go in the response).
//
// A handler that returns a nil Pending sends nothing and waits for nothing.
type Pending func(ctx context.Context) (Response, error)

// Respond returns a Pending that is already complete.
func Respond(msg kmsg.Response) Pending {
	return func(context.Context) (Response, error) { return Response{Msg: msg}, nil }
}

// RespondSpliced returns a Pending that is already complete with a spliced
// response.
func RespondSpliced(sr *SplicedResponse) Pending {
	return func(context.Context) (Response, error) { return Response{Spliced: sr}, nil }
}

// SplicedResponse is a response body given as chunks, written in order
// after the response header the writer adds (size, correlation id, and the
// empty tag byte of a flexible header). The size prefix is the header plus
// the sum of the chunk lengths, so the chunks must be exactly the body.
type SplicedResponse = wire.Body

// Chunk is a run of bytes or a file range of a spliced response.
type Chunk = wire.Chunk
