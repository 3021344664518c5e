package uplink

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// HeaderSource is the provenance header every forwarded record carries:
// where it came from, as "CLUSTER/TOPIC/PARTITION/OFFSET" (the source
// cluster's id, the local topic, partition and offset). Neither a cluster
// id (base64url) nor a topic name can hold a '/'. A record forwarded over
// several links carries one such header per hop, the newest last.
const HeaderSource = "wren-uplink-source"

// Source is one provenance header's value.
type Source struct {
	Cluster   string
	Topic     string
	Partition int32
	Offset    int64
}

// String is the header's value.
func (s Source) String() string {
	return s.Cluster + "/" + s.Topic + "/" + strconv.FormatInt(int64(s.Partition), 10) + "/" + strconv.FormatInt(s.Offset, 10)
}

// errSource is every refusal of ParseSource.
var errSource = errors.New("uplink: bad " + HeaderSource + " header")

// ParseSource reads a provenance header's value. It comes from the far
// side or from any producer of the local topic, so it is checked whole.
func ParseSource(v []byte) (Source, error) {
	if len(v) > 512 {
		return Source{}, fmt.Errorf("%w: %d bytes", errSource, len(v))
	}
	parts := strings.Split(string(v), "/")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" {
		return Source{}, fmt.Errorf("%w: %q is not CLUSTER/TOPIC/PARTITION/OFFSET", errSource, v)
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 {
		return Source{}, fmt.Errorf("%w: partition %q", errSource, parts[2])
	}
	o, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || o < 0 {
		return Source{}, fmt.Errorf("%w: offset %q", errSource, parts[3])
	}
	return Source{Cluster: parts[0], Topic: parts[1], Partition: int32(p), Offset: o}, nil
}
