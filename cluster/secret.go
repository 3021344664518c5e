package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
)

// The cluster secret is random bytes the acting controller records once
// per cluster, with the cluster id of a new cluster or on its first round
// as acting controller in a cluster from before secrets. Every node reads
// the same bytes from its image, across restarts: what needs a key that
// is the same cluster-wide and never leaves the cluster derives one from
// it for its own purpose (DerivedSecret). The first is SCRAM's fake
// credentials of unknown users (security/scram's Config.Secret): keyed by
// one node alone, they would differ from node to node, or across a
// restart, and a client comparing salts would tell unknown users from
// known ones.
//
// The secret sits in the metadata log and its snapshots beside the SCRAM
// credentials, with the same exposure: anyone who reads the data
// directory reads it.

// ClusterSecretBytes is the size of the secret the controller draws.
const ClusterSecretBytes = 32

// ClusterSecretRecord records the cluster secret. Only the first one
// applied counts: the controller writes one only when the image has none.
type ClusterSecretRecord struct {
	Secret []byte `json:"secret"`
}

// NewClusterSecret draws a cluster secret.
func NewClusterSecret() ([]byte, error) {
	b := make([]byte, ClusterSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("cluster: drawing the cluster secret: %w", err)
	}
	return b, nil
}

// HasClusterSecret reports whether the cluster secret is recorded.
func (im *Image) HasClusterSecret() bool { return len(im.secret) > 0 }

// DerivedSecret is the key of one purpose ("scram fake credentials"),
// HMAC-SHA-256 of the purpose under the cluster secret: the same on every
// node that applied the secret's record; nil when there is none yet.
func (im *Image) DerivedSecret(purpose string) []byte {
	if len(im.secret) == 0 {
		return nil
	}
	h := hmac.New(sha256.New, im.secret)
	h.Write([]byte(purpose))
	return h.Sum(nil)
}

func (next *Image) applyClusterSecret(offset uint64, r *ClusterSecretRecord) error {
	if len(r.Secret) < ClusterSecretBytes {
		return fmt.Errorf("cluster: metadata record %d: a cluster secret of %d bytes, want %d", offset, len(r.Secret), ClusterSecretBytes)
	}
	if len(next.secret) == 0 {
		next.secret = append([]byte(nil), r.Secret...)
	}
	return nil
}

// DecideClusterSecret records secret as the cluster secret when the image
// has none; a cluster that has one keeps it.
func DecideClusterSecret(im *Image, secret []byte) Result[struct{}] {
	if im.HasClusterSecret() {
		return Result[struct{}]{}
	}
	if len(secret) != ClusterSecretBytes {
		return Result[struct{}]{Err: fmt.Errorf("cluster: a cluster secret of %d bytes, want %d", len(secret), ClusterSecretBytes)}
	}
	return Result[struct{}]{Records: []Record{{Kind: KindClusterSecret, ClusterSecret: &ClusterSecretRecord{Secret: secret}}}}
}

// decideNewCluster is what a cluster gets on the first round of its
// acting controller: its id and its secret, each if missing, in one entry.
func decideNewCluster(im *Image, id string) (Result[struct{}], error) {
	r := DecideClusterID(im, id)
	if im.HasClusterSecret() {
		return r, nil
	}
	secret, err := NewClusterSecret()
	if err != nil {
		return r, err
	}
	s := DecideClusterSecret(im, secret)
	r.Records = append(r.Records, s.Records...)
	r.Err = s.Err
	return r, nil
}
