package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/security/scram"
)

// bootstrapAdminIterations is the iteration count of the credentials
// derived from a password in the environment: twice Kafka's minimum.
const bootstrapAdminIterations = 8192

// bootstrapAdminRetry is how often a node that is not the acting
// controller, or whose commit failed, tries again.
const bootstrapAdminRetry = 500 * time.Millisecond

// bootstrapAdminCredentials are the bootstrap admin's credentials from
// bootstrap.admin.* and the environment (config/bootstrap.go): none when
// no user is configured. A credential in both the file and the
// environment is refused: which one was meant is not known.
func bootstrapAdminCredentials(cfg *config.Config) ([]cluster.ScramUpsertion, error) {
	password, fromEnv := os.LookupEnv(config.BootstrapAdminPasswordEnv)
	user := cfg.BootstrapAdminUser
	if user == "" {
		return nil, nil
	}
	spec, fromFile := cfg.BootstrapAdminScram()
	switch {
	case fromFile && fromEnv:
		return nil, fmt.Errorf("broker: the bootstrap admin %q has a credential in bootstrap.admin.scram and a password in %s: unset one", user, config.BootstrapAdminPasswordEnv)
	case fromFile:
		m, _ := scram.ParseMechanism(spec.Mechanism) // checked at load
		return []cluster.ScramUpsertion{{User: user, Mechanism: m, Iterations: spec.Iterations, Salt: spec.Salt, SaltedPassword: spec.SaltedPassword}}, nil
	case !fromEnv:
		return nil, nil // the metadata log may have it already: the loop says so
	case password == "":
		return nil, fmt.Errorf("broker: %s is set but empty", config.BootstrapAdminPasswordEnv)
	}
	var ups []cluster.ScramUpsertion
	for _, m := range []scram.Mechanism{scram.SHA512, scram.SHA256} {
		salt := make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return nil, fmt.Errorf("broker: bootstrap admin salt: %w", err)
		}
		sp, err := m.SaltedPassword(password, salt, bootstrapAdminIterations)
		if err != nil {
			return nil, fmt.Errorf("broker: bootstrap admin credential: %w", err)
		}
		ups = append(ups, cluster.ScramUpsertion{User: user, Mechanism: m, Iterations: bootstrapAdminIterations, Salt: salt, SaltedPassword: sp})
	}
	return ups, nil
}

// runBootstrapAdmin records the bootstrap admin's credentials once the
// metadata log has none of that user: on whichever node is the acting
// controller (every node may be given the same keys), retried until the
// image has the user or the broker stops. A user that already has a
// credential keeps it.
func (b *Broker) runBootstrapAdmin(ctx context.Context, ups []cluster.ScramUpsertion) {
	user := b.cfg.BootstrapAdminUser
	if len(b.controller.Image().ScramInfos(user)) > 0 {
		b.logger.Info("bootstrap admin has a credential already; it is left as it is", "user", user)
		return
	}
	if len(ups) == 0 {
		b.logger.Warn("bootstrap.admin.user has no credential in the metadata log, and none is given: set bootstrap.admin.scram or "+config.BootstrapAdminPasswordEnv, "user", user)
		return
	}
	t := time.NewTicker(bootstrapAdminRetry)
	defer t.Stop()
	var lastErr string
	for {
		if len(b.controller.Image().ScramInfos(user)) > 0 {
			return // recorded by another node, or by this one
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		wrote, err := b.controller.BootstrapScram(cctx, ups)
		cancel()
		switch {
		case err == nil && wrote:
			mechs := make([]string, len(ups))
			for i, u := range ups {
				mechs[i] = u.Mechanism.Name()
			}
			b.logger.Info("bootstrap admin credential recorded in the metadata log", "user", user, "mechanisms", mechs)
			return
		case err != nil && !errors.Is(err, kerr.NotController) && err.Error() != lastErr && ctx.Err() == nil:
			b.logger.Warn("bootstrap admin credential not recorded yet; trying again", "user", user, "err", err)
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
