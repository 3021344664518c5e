package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The bootstrap admin: a SCRAM user the acting controller records when
// the metadata log has no credential of that name, so that a cluster
// whose listeners all ask for SASL can be administered from its first
// start. The file holds no password: bootstrap.admin.scram is a salted
// credential in the form kafka-storage format --add-scram takes, or the
// password comes from the environment (BootstrapAdminPasswordEnv).

// BootstrapAdminPasswordEnv names the environment variable that may hold
// the bootstrap admin's password for the first start, instead of
// bootstrap.admin.scram.
const BootstrapAdminPasswordEnv = "WREN_BOOTSTRAP_ADMIN_PASSWORD"

// ScramSpec is a salted SCRAM credential as kafka-storage's --add-scram
// gives one: SCRAM-SHA-512=[name=admin,salt="...",saltedpassword="...",iterations=8192].
type ScramSpec struct {
	Mechanism string // SCRAM-SHA-256 or SCRAM-SHA-512
	// Name is the name= field, "" when absent.
	Name           string
	Salt           []byte
	SaltedPassword []byte
	Iterations     int32
}

// Kafka's bounds on SCRAM iterations (security/scram's MinIterations and
// MaxIterations; config imports no wren package).
const (
	minScramIterations = 4096
	maxScramIterations = 16384
)

// ParseScramSpec reads a credential in kafka-storage's --add-scram form.
// A password= field is refused: the file must not hold a password.
func ParseScramSpec(s string) (ScramSpec, error) {
	s = strings.TrimSpace(s)
	mech, rest, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return ScramSpec{}, errors.New(`want MECHANISM=[salt="...",saltedpassword="...",iterations=N]`)
	}
	spec := ScramSpec{Mechanism: strings.TrimSpace(mech)}
	hashLen := 0
	switch spec.Mechanism {
	case "SCRAM-SHA-256":
		hashLen = 32
	case "SCRAM-SHA-512":
		hashLen = 64
	default:
		return ScramSpec{}, fmt.Errorf("unknown SCRAM mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", spec.Mechanism)
	}
	seen := map[string]bool{}
	for _, field := range strings.Split(rest[1:len(rest)-1], ",") {
		k, v, ok := strings.Cut(field, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return ScramSpec{}, fmt.Errorf("%q is not key=value", strings.TrimSpace(field))
		}
		if seen[k] {
			return ScramSpec{}, fmt.Errorf("%s is given twice", k)
		}
		seen[k] = true
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		var err error
		switch k {
		case "name":
			spec.Name = v
		case "salt":
			spec.Salt, err = base64.StdEncoding.DecodeString(v)
		case "saltedpassword":
			spec.SaltedPassword, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			var n int64
			n, err = strconv.ParseInt(v, 10, 32)
			spec.Iterations = int32(n)
		case "password":
			return ScramSpec{}, fmt.Errorf("a password does not belong in the config file: give salt and saltedpassword, or the password in %s for the first start", BootstrapAdminPasswordEnv)
		default:
			return ScramSpec{}, fmt.Errorf("unknown field %q (name, salt, saltedpassword, iterations)", k)
		}
		if err != nil {
			return ScramSpec{}, fmt.Errorf("%s: %v", k, err)
		}
	}
	switch {
	case len(spec.Salt) == 0:
		return ScramSpec{}, errors.New("salt is missing or empty")
	case spec.SaltedPassword == nil:
		return ScramSpec{}, errors.New("saltedpassword is missing")
	case len(spec.SaltedPassword) != hashLen:
		return ScramSpec{}, fmt.Errorf("a %s saltedpassword has %d bytes, not %d", spec.Mechanism, hashLen, len(spec.SaltedPassword))
	case !seen["iterations"]:
		return ScramSpec{}, errors.New("iterations is missing")
	case spec.Iterations < minScramIterations || spec.Iterations > maxScramIterations:
		return ScramSpec{}, fmt.Errorf("iterations %d is outside [%d, %d]", spec.Iterations, minScramIterations, maxScramIterations)
	}
	return spec, nil
}

var scramSpecValidator = custom(`MECHANISM=[salt="base64",saltedpassword="base64",iterations=N], as kafka-storage format --add-scram takes it`, func(v any) error {
	if v.(string) == "" {
		return nil
	}
	_, err := ParseScramSpec(v.(string))
	return err
})

// BootstrapAdminScram is bootstrap.admin.scram read; ok is false when it
// is not set.
func (c *Config) BootstrapAdminScram() (spec ScramSpec, ok bool) {
	if c.BootstrapAdminScramValue == "" {
		return ScramSpec{}, false
	}
	spec, err := ParseScramSpec(c.BootstrapAdminScramValue)
	return spec, err == nil // checked at load
}

// bootstrapAdmin checks that bootstrap.admin.scram has a user to go with,
// and names the same one.
func (k *checker) bootstrapAdmin() {
	const user, cred = "bootstrap.admin.user", "bootstrap.admin.scram"
	if k.skip(user, cred) {
		return
	}
	spec, ok := k.c.BootstrapAdminScram()
	switch {
	case !ok:
	case k.c.BootstrapAdminUser == "":
		k.fail([]string{cred}, "%s is set but %s is not: name the user it is the credential of", cred, user)
	case spec.Name != "" && spec.Name != k.c.BootstrapAdminUser:
		k.fail([]string{cred, user}, "%s names user %q, but %s is %q", cred, spec.Name, user, k.c.BootstrapAdminUser)
	}
}
