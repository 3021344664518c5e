package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// UUID is Kafka's Uuid: 16 bytes, shown as unpadded URL-safe base64.
type UUID [16]byte

// NewUUID returns a random UUID that is neither zero nor Kafka's reserved
// metadata topic id.
func NewUUID() UUID {
	for {
		var u UUID
		rand.Read(u[:])
		if u != (UUID{}) && u != (UUID{15: 1}) {
			return u
		}
	}
}

func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID parses Kafka's base64 form.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("cluster: bad uuid %q", s)
	}
	copy(u[:], b)
	return u, nil
}

func (u UUID) MarshalJSON() ([]byte, error) { return json.Marshal(u.String()) }

func (u *UUID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseUUID(s)
	*u = v
	return err
}
