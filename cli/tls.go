package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"
)

// tlsFlags connect a client command to an SSL listener, with rpk's names:
// any of them turns TLS on.
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
	}
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
