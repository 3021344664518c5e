package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/wren-broker/wren/security/scram"
)

// SCRAM credentials in the metadata: one record per user and mechanism
// (KindScramCredential), the image's map of them, and the controller's
// AlterScramCredentials (the rule is core_scram.go). The records hold
// what Kafka's UserScramCredentialRecord holds, the salt, the iteration
// count, StoredKey and ServerKey, never a password or salted password:
// a node, a snapshot or a copy of the log lets no one log in.

// ScramCredentialRecord sets (Credential non-nil) or deletes (nil) the
// credential of User for Mechanism ("SCRAM-SHA-256", "SCRAM-SHA-512").
type ScramCredentialRecord struct {
	User       string           `json:"user"`
	Mechanism  string           `json:"mechanism"`
	Credential *ScramCredential `json:"credential"`
}

// ScramCredential is a stored credential (scram.Credential's fields);
// the byte fields are base64 in the JSON.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int32  `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

func (c ScramCredential) scram() scram.Credential {
	return scram.Credential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

// applyScramCredential applies r to next (a copy of im). A credential
// that is not one of its mechanism, and the delete of one that does not
// exist, are broken invariants: the rule never writes them.
func (next *Image) applyScramCredential(im *Image, offset uint64, r *ScramCredentialRecord) error {
	m, ok := scram.ParseMechanism(r.Mechanism)
	if !ok {
		return fmt.Errorf("cluster: metadata record %d: SCRAM mechanism %q", offset, r.Mechanism)
	}
	if r.User == "" {
		return fmt.Errorf("cluster: metadata record %d: a SCRAM credential of no user", offset)
	}
	byUser := maps.Clone(im.scram)
	if byUser == nil {
		byUser = map[string]map[scram.Mechanism]ScramCredential{}
	}
	mechs := maps.Clone(byUser[r.User])
	if mechs == nil {
		mechs = map[scram.Mechanism]ScramCredential{}
	}
	if r.Credential == nil {
		if _, had := mechs[m]; !had {
			return fmt.Errorf("cluster: metadata record %d deletes the %s credential of %q, which does not exist", offset, m, r.User)
		}
		delete(mechs, m)
	} else {
		if err := m.Check(r.Credential.scram()); err != nil {
			return fmt.Errorf("cluster: metadata record %d: the %s credential of %q: %w", offset, m, r.User, err)
		}
		mechs[m] = *r.Credential
	}
	if len(mechs) == 0 {
		delete(byUser, r.User)
	} else {
		byUser[r.User] = mechs
	}
	next.scram = byUser
	return nil
}

// ScramCredential returns user's credential for m: the lookup of
// scram.Config.
func (im *Image) ScramCredential(m scram.Mechanism, user string) (scram.Credential, bool) {
	c, ok := im.scram[user][m]
	if !ok {
		return scram.Credential{}, false
	}
	return c.scram(), true
}

// ScramUsers lists the users with a SCRAM credential, sorted.
func (im *Image) ScramUsers() []string { return slices.Sorted(maps.Keys(im.scram)) }

// ScramInfo is what DescribeUserScramCredentials tells of a credential.
type ScramInfo struct {
	Mechanism  scram.Mechanism
	Iterations int32
}

// ScramInfos are user's credentials' mechanisms and iteration counts, in
// mechanism order; none for a user without credentials.
func (im *Image) ScramInfos(user string) []ScramInfo {
	var out []ScramInfo
	for _, m := range scram.Mechanisms {
		if c, ok := im.scram[user][m]; ok {
			out = append(out, ScramInfo{Mechanism: m, Iterations: c.Iterations})
		}
	}
	return out
}

// scramRecords are the image's credentials as the records that make
// them, sorted by user and mechanism: a snapshot's.
func (im *Image) scramRecords() []ScramCredentialRecord {
	var out []ScramCredentialRecord
	for _, user := range im.ScramUsers() {
		for _, m := range scram.Mechanisms {
			if c, ok := im.scram[user][m]; ok {
				out = append(out, ScramCredentialRecord{User: user, Mechanism: m.Name(), Credential: &c})
			}
		}
	}
	return out
}

// AlterScramCredentials deletes and upserts SCRAM credentials
// (KIP-554's AlterUserScramCredentials), all in one metadata entry
// (DecideAlterScramCredentials). Each user gets its result; when the
// entry does not commit, every user that would have changed gets the
// commit's error.
func (c *Controller) AlterScramCredentials(ctx context.Context, req AlterScramRequest) ([]ScramResult, error) {
	var results []ScramResult
	err := c.change(ctx, func() {
		r := DecideAlterScramCredentials(c.Image(), c.rules(), req)
		results = r.Response
		if err := commitResult(c.commit, r); err != nil {
			for i := range results {
				if results[i].Err == nil {
					results[i].Err = err
				}
			}
		}
	})
	return results, err
}

// BootstrapScram commits the bootstrap admin's credentials when the
// image has none of that user (DecideBootstrapScram), and reports
// whether it did. Only the acting controller commits; elsewhere it is
// NOT_CONTROLLER, and the caller tries again later.
func (c *Controller) BootstrapScram(ctx context.Context, ups []ScramUpsertion) (bool, error) {
	var wrote bool
	var res error
	err := c.change(ctx, func() {
		r := DecideBootstrapScram(c.Image(), ups)
		if res = commitResult(c.commit, r); res == nil {
			wrote = r.Response && len(r.Records) > 0
		}
	})
	if err != nil {
		return false, err
	}
	return wrote, res
}
