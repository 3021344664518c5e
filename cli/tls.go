package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	ucli "github.com/urfave/cli/v2"
)

// tlsFlags connect a client command to an SSL listener, with rpk's names
// (any of the --tls ones turns TLS on), and authenticate it on a SASL
// listener (--sasl-*).
func tlsFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "tls-enabled", EnvVars: []string{"WREN_TLS_ENABLED"},
			Usage: "connect with TLS (an SSL listener), trusting the system's CAs unless --tls-truststore is given"},
		&ucli.StringFlag{Name: "tls-truststore", EnvVars: []string{"WREN_TLS_TRUSTSTORE"},
			Usage: "PEM file of the CA certificates the broker's certificate must chain to (implies --tls-enabled)"},
		&ucli.StringFlag{Name: "tls-cert", EnvVars: []string{"WREN_TLS_CERT"},
			Usage: "PEM file of this client's certificate, for a listener with ssl.client.auth (with --tls-key)"},
		&ucli.StringFlag{Name: "tls-key", EnvVars: []string{"WREN_TLS_KEY"},
			Usage: "PEM file of this client's private key (with --tls-cert)"},
		&ucli.StringFlag{Name: "sasl-mechanism", EnvVars: []string{"WREN_SASL_MECHANISM"},
			Usage: "authenticate on a SASL_PLAINTEXT or SASL_SSL listener: SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN (with --sasl-user)"},
		&ucli.StringFlag{Name: "sasl-user", EnvVars: []string{"WREN_SASL_USER"},
			Usage: "the SASL user (with --sasl-mechanism)"},
		&ucli.StringFlag{Name: "sasl-password", EnvVars: []string{"WREN_SASL_PASSWORD"},
			Usage: "the SASL user's password; prefer the environment variable, which no process listing shows"},
	}
}

// clientSASL is the client option the SASL flags ask for, nil for none.
func clientSASL(c *ucli.Context) (kgo.Opt, error) {
	mech, user, pass := c.String("sasl-mechanism"), c.String("sasl-user"), c.String("sasl-password")
	if mech == "" && user == "" && pass == "" {
		return nil, nil
	}
	if mech == "" || user == "" {
		return nil, fmt.Errorf("%w: --sasl-mechanism and --sasl-user go together (and a password in WREN_SASL_PASSWORD or --sasl-password)", ErrUsage)
	}
	switch strings.ToUpper(mech) {
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), nil
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()), nil
	case "PLAIN":
		return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), nil
	}
	return nil, fmt.Errorf("%w: --sasl-mechanism %q: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", ErrUsage, mech)
}

// clientTLS is the TLS config the flags ask for, nil for plaintext.
func clientTLS(c *ucli.Context) (*tls.Config, error) {
	ca, cert, key := c.String("tls-truststore"), c.String("tls-cert"), c.String("tls-key")
	if !c.Bool("tls-enabled") && ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		data, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%w: --tls-truststore: %v", ErrUsage, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%w: --tls-truststore %s holds no PEM certificate", ErrUsage, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrUsage)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%w: --tls-cert/--tls-key: %v", ErrUsage, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
