package cluster

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/security/scram"
)

// The SCRAM credential rule: AlterUserScramCredentials
// (testdata/rules/scram.txt).

// ScramDeletion deletes user's credential for one mechanism.
type ScramDeletion struct {
	User      string
	Mechanism scram.Mechanism
}

// ScramUpsertion sets user's credential for one mechanism from a salted
// password, as Kafka clients send it (Hi(password, salt, iterations));
// the rule derives StoredKey and ServerKey and keeps only those.
type ScramUpsertion struct {
	User           string
	Mechanism      scram.Mechanism
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// AlterScramRequest is one AlterUserScramCredentials request.
type AlterScramRequest struct {
	Deletions  []ScramDeletion
	Upsertions []ScramUpsertion
}

// ScramResult is one user's outcome.
type ScramResult struct {
	User string
	Err  error
}

// DecideAlterScramCredentials decides an AlterUserScramCredentials
// request as Kafka's ScramControlManager does: a user named more than
// once in the request, in deletions and upsertions together, is
// DUPLICATE_RESOURCE (whatever the mechanisms); an empty user name, an
// iteration count outside [4096, 16384], an empty salt or a salted
// password not of the hash's size are UNACCEPTABLE_CREDENTIAL; a
// mechanism other than SCRAM-SHA-256 and SCRAM-SHA-512 is
// UNSUPPORTED_SASL_MECHANISM; deleting a credential that does not exist
// is RESOURCE_NOT_FOUND. The changes of every other user are one entry,
// committed together (Kafka's atomic result). Results are in the order
// users first appear, deletions before upsertions.
func DecideAlterScramCredentials(im *Image, _ RuleConfig, req AlterScramRequest) Result[[]ScramResult] {
	type item struct {
		user string
		rec  *ScramCredentialRecord
		err  error
	}
	var items []*item
	byUser := map[string]*item{}
	duplicate := fmt.Errorf("%w: A user credential cannot be altered twice in the same request", kerr.DuplicateResource)
	take := func(user string, decide func() (*ScramCredentialRecord, error)) {
		if it := byUser[user]; it != nil {
			it.rec, it.err = nil, duplicate
			return
		}
		it := &item{user: user}
		it.rec, it.err = decide()
		byUser[user] = it
		items = append(items, it)
	}
	for _, d := range req.Deletions {
		take(d.User, func() (*ScramCredentialRecord, error) {
			if err := checkScramUser(d.User, d.Mechanism); err != nil {
				return nil, err
			}
			if _, ok := im.ScramCredential(d.Mechanism, d.User); !ok {
				return nil, fmt.Errorf("%w: Attempt to delete a user credential that does not exist", kerr.ResourceNotFound)
			}
			return &ScramCredentialRecord{User: d.User, Mechanism: d.Mechanism.Name()}, nil
		})
	}
	for _, u := range req.Upsertions {
		take(u.User, func() (*ScramCredentialRecord, error) {
			if err := checkScramUser(u.User, u.Mechanism); err != nil {
				return nil, err
			}
			switch {
			case u.Iterations < scram.MinIterations:
				return nil, fmt.Errorf("%w: Too few iterations", kerr.UnacceptableCredential)
			case u.Iterations > scram.MaxIterations:
				return nil, fmt.Errorf("%w: Too many iterations", kerr.UnacceptableCredential)
			}
			c, err := u.Mechanism.CredentialFromSalted(u.Salt, u.SaltedPassword, u.Iterations)
			if err != nil {
				return nil, fmt.Errorf("%w: %s", kerr.UnacceptableCredential, strings.TrimPrefix(err.Error(), scram.ErrInvalidCredential.Error()+": "))
			}
			return &ScramCredentialRecord{User: u.User, Mechanism: u.Mechanism.Name(), Credential: &ScramCredential{
				Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}}, nil
		})
	}
	var r Result[[]ScramResult]
	for _, it := range items {
		r.Response = append(r.Response, ScramResult{User: it.user, Err: it.err})
		if it.err == nil {
			r.Records = append(r.Records, Record{Kind: KindScramCredential, ScramCredential: it.rec})
		}
	}
	return r
}

func checkScramUser(user string, m scram.Mechanism) error {
	if user == "" {
		return fmt.Errorf("%w: Username must not be empty", kerr.UnacceptableCredential)
	}
	if !m.Valid() {
		return fmt.Errorf("%w: Unknown SCRAM mechanism", kerr.UnsupportedSaslMechanism)
	}
	return nil
}

// DecideBootstrapScram records the bootstrap admin's credentials (the
// config's bootstrap.admin.*) when the image has no credential of that
// user for any mechanism: once per cluster, and never over a credential
// an operator set or changed since. The response is whether it wrote
// any. The upsertions are checked as AlterUserScramCredentials checks
// them; a bad one is the rule's error and nothing is written.
func DecideBootstrapScram(im *Image, ups []ScramUpsertion) Result[bool] {
	if len(ups) == 0 {
		return Result[bool]{}
	}
	user := ups[0].User
	if len(im.ScramInfos(user)) > 0 {
		return Result[bool]{}
	}
	var r Result[bool]
	seen := map[scram.Mechanism]bool{}
	for _, u := range ups {
		if u.User != user || seen[u.Mechanism] {
			return Result[bool]{Err: fmt.Errorf("cluster: bootstrap credentials: one user, one credential per mechanism")}
		}
		seen[u.Mechanism] = true
		res := DecideAlterScramCredentials(im, RuleConfig{}, AlterScramRequest{Upsertions: []ScramUpsertion{u}})
		if err := res.Response[0].Err; err != nil {
			return Result[bool]{Err: fmt.Errorf("cluster: the bootstrap %s credential of %q: %w", u.Mechanism, user, err)}
		}
		r.Records = append(r.Records, res.Records...)
	}
	r.Response = true
	return r
}
