package cli

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormat prints records as a format string says, in the manner of
// kcat -f and rpk -f:
//
//	%t topic   %p partition   %o offset   %T timestamp (ms)
//	%k key     %v value       %K key size %V value size
//	%h headers as k=v,k=v     %% a percent sign
//	\n \r \t \\ the usual escapes
//
// A null key or value prints as nothing, its size as -1.
type recordFormat []formatPart

type formatPart func(dst []byte, r *kgo.Record) []byte

// defaultRecordFormat prints the value only, one per line, as
// kafka-console-consumer does.
const defaultRecordFormat = `%v\n`

// verbs maps each % verb to what it appends.
var verbs = map[byte]formatPart{
	't': func(dst []byte, r *kgo.Record) []byte { return append(dst, r.Topic...) },
	'p': func(dst []byte, r *kgo.Record) []byte { return strconv.AppendInt(dst, int64(r.Partition), 10) },
	'o': func(dst []byte, r *kgo.Record) []byte { return strconv.AppendInt(dst, r.Offset, 10) },
	'T': func(dst []byte, r *kgo.Record) []byte { return strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10) },
	'k': func(dst []byte, r *kgo.Record) []byte { return append(dst, r.Key...) },
	'v': func(dst []byte, r *kgo.Record) []byte { return append(dst, r.Value...) },
	'K': func(dst []byte, r *kgo.Record) []byte { return strconv.AppendInt(dst, sizeOf(r.Key), 10) },
	'V': func(dst []byte, r *kgo.Record) []byte { return strconv.AppendInt(dst, sizeOf(r.Value), 10) },
	'h': appendHeaders,
}

var escapes = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', '\\': '\\'}

func sizeOf(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

func appendHeaders(dst []byte, r *kgo.Record) []byte {
	for i, h := range r.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, h.Key...)
		dst = append(dst, '=')
		dst = append(dst, h.Value...)
	}
	return dst
}

func literal(s []byte) formatPart {
	return func(dst []byte, _ *kgo.Record) []byte { return append(dst, s...) }
}

// parseRecordFormat compiles a format string; an unknown verb or escape,
// or a trailing % or \, is an error.
func parseRecordFormat(s string) (recordFormat, error) {
	var parts recordFormat
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			parts = append(parts, literal(lit))
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '%' && ch != '\\' {
			lit = append(lit, ch)
			continue
		}
		if i+1 == len(s) {
			return nil, fmt.Errorf("%w: format %q ends in %q", ErrUsage, s, ch)
		}
		i++
		next := s[i]
		switch {
		case ch == '%' && next == '%':
			lit = append(lit, '%')
		case ch == '%':
			verb, ok := verbs[next]
			if !ok {
				return nil, fmt.Errorf("%w: format %q: unknown verb %%%c", ErrUsage, s, next)
			}
			flush()
			parts = append(parts, verb)
		default:
			e, ok := escapes[next]
			if !ok {
				return nil, fmt.Errorf("%w: format %q: unknown escape \\%c", ErrUsage, s, next)
			}
			lit = append(lit, e)
		}
	}
	flush()
	return parts, nil
}

func (f recordFormat) append(dst []byte, r *kgo.Record) []byte {
	for _, part := range f {
		dst = part(dst, r)
	}
	return dst
}

// jsonRecord is one line of consume --json. Key, value and header values
// are strings (invalid UTF-8 becomes U+FFFD); null is JSON null.
type jsonRecord struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

func nullableString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func appendJSONRecord(dst []byte, r *kgo.Record) ([]byte, error) {
	jr := jsonRecord{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: nullableString(r.Key), Value: nullableString(r.Value), Headers: []jsonHeader{},
	}
	for _, h := range r.Headers {
		jr.Headers = append(jr.Headers, jsonHeader{Key: h.Key, Value: nullableString(h.Value)})
	}
	b, err := json.Marshal(jr)
	if err != nil {
		return dst, fmt.Errorf("cli: json: %w", err)
	}
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}
