package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/wren-broker/wren/security/principal"
)

// The security protocols of Kafka's listener model.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

var protocols = []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL}

// defaultProtocolMap is Kafka's default listener.security.protocol.map.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// ParseProtocolMap reads listener.security.protocol.map: NAME:PROTOCOL
// pairs separated by commas, names upper-cased as listener names are.
func ParseProtocolMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, proto, ok := strings.Cut(pair, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", pair)
		case !validListenerName(name):
			return nil, fmt.Errorf("listener name %q must be letters, digits and _", name)
		case !slices.Contains(protocols, proto):
			return nil, fmt.Errorf("%s: unknown security protocol %q (known: %s)", name, proto, strings.Join(protocols, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s is mapped twice", name)
		}
		out[name] = proto
	}
	return out, nil
}

var protocolMapValidator = custom("NAME:PROTOCOL, ... with PROTOCOL one of "+strings.Join(protocols, ", "), func(v any) error {
	_, err := ParseProtocolMap(v.(string))
	return err
})

var cipherSuitesValidator = listValidator("IANA cipher suite names", false, func(s string, _ []string) error {
	if _, ok := cipherSuiteID(s); !ok {
		return fmt.Errorf("unknown or insecure cipher suite %q", s)
	}
	return nil
})

// cipherSuiteID finds a suite Go offers by its IANA name; TLS 1.3's are
// found too (ok) with id 0, since they cannot be chosen.
func cipherSuiteID(name string) (uint16, bool) {
	for _, cs := range tls.CipherSuites() {
		if cs.Name == name {
			if slices.Contains(cs.SupportedVersions, tls.VersionTLS13) {
				return 0, true
			}
			return cs.ID, true
		}
	}
	return 0, false
}

// ListenerProtocol is the security protocol of a listener: its entry in
// listener.security.protocol.map; else PLAINTEXT for a controller listener
// (Kafka's KRaft default) and for a map left at its default; "" when the
// name has none. A controller listener may be PLAINTEXT or SSL (mutual TLS
// between the peers, ControllerSSL).
func (c *Config) ListenerProtocol(name string) string {
	m, err := ParseProtocolMap(c.ListenerSecurityProtocolMap)
	if err != nil {
		return ""
	}
	name = strings.ToUpper(name)
	if p, ok := m[name]; ok {
		return p
	}
	if slices.ContainsFunc(c.ControllerListenerNames, func(n string) bool { return strings.EqualFold(n, name) }) {
		return ProtocolPlaintext
	}
	if c.ListenerSecurityProtocolMap == defaultProtocolMap {
		// Kafka maps only the protocol names by default; wren kept any
		// client listener name as PLAINTEXT before this setting existed,
		// and files that name theirs INTERNAL or CLIENT still start.
		return ProtocolPlaintext
	}
	return ""
}

// sslKeys are the settings a listener may override with
// listener.name.NAME.<key>.
var sslKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.principal.mapping.rules",
}

var principalRulesValidator = custom("Kafka's principal mapping rules: RULE:pattern/replacement/[L|U] and DEFAULT, separated by commas", func(v any) error {
	_, err := principal.Parse(v.(string))
	return err
})

// SSL is one listener's TLS settings, its overrides applied.
type SSL struct {
	Listener string
	// KeystoreLocation or KeystoreChain with KeystoreKey hold the
	// certificate and key; KeyPassword decrypts a legacy-encrypted key.
	KeystoreLocation, KeystoreChain, KeystoreKey, KeyPassword string
	// TruststoreLocation or TruststoreCertificates hold the CAs client
	// certificates must chain to.
	TruststoreLocation, TruststoreCertificates string
	// ClientAuth is none, requested or required.
	ClientAuth   string
	Protocols    []string
	CipherSuites []string
	// PrincipalMappingRules maps client certificates' DNs to principal
	// names (ssl.principal.mapping.rules); mapper is it parsed.
	PrincipalMappingRules string
	mapper                *principal.Mapper
	// keys are the setting names each value came from, for errors.
	keys map[string]string
}

// Key is the setting name (ssl.x or listener.name.NAME.ssl.x) a field was
// read from, for error messages.
func (s SSL) Key(name string) string {
	if k, ok := s.keys[name]; ok {
		return k
	}
	return name
}

// ListenerSSL returns the TLS settings of the named listener: each ssl.*
// setting from listener.name.NAME.ssl.* when the file gives one, else the
// shared one.
func (c *Config) ListenerSSL(name string) SSL {
	over := c.listenerSSL[strings.ToLower(name)]
	s := SSL{Listener: strings.ToUpper(name), keys: map[string]string{}}
	str := func(key string) string {
		if g, ok := over[key]; ok {
			s.keys[key] = "listener.name." + strings.ToLower(name) + "." + key
			return g.value.(string)
		}
		return c.values[key].(string)
	}
	list := func(key string) []string {
		if g, ok := over[key]; ok {
			s.keys[key] = "listener.name." + strings.ToLower(name) + "." + key
			return slices.Clone(g.value.([]string))
		}
		return slices.Clone(c.values[key].([]string))
	}
	s.KeystoreLocation = str("ssl.keystore.location")
	s.KeystoreChain = str("ssl.keystore.certificate.chain")
	s.KeystoreKey = str("ssl.keystore.key")
	s.KeyPassword = str("ssl.key.password")
	s.TruststoreLocation = str("ssl.truststore.location")
	s.TruststoreCertificates = str("ssl.truststore.certificates")
	s.ClientAuth = str("ssl.client.auth")
	s.Protocols = list("ssl.enabled.protocols")
	s.CipherSuites = list("ssl.cipher.suites")
	s.PrincipalMappingRules = str("ssl.principal.mapping.rules")
	// Checked when the file was read: an error cannot happen here, and
	// MapPrincipal refuses every DN if one did.
	s.mapper, _ = principal.Parse(s.PrincipalMappingRules)
	return s
}

// MapPrincipal maps the distinguished name of a client certificate (RFC
// 2253) to the principal's name, without the User: prefix, by the
// listener's ssl.principal.mapping.rules. A DN no rule matches is an
// error: the client is not authenticated.
func (s SSL) MapPrincipal(dn string) (string, error) {
	if s.mapper == nil {
		return "", fmt.Errorf("listener %s: %s does not parse", s.Listener, s.Key("ssl.principal.mapping.rules"))
	}
	return s.mapper.Map(dn)
}

// Files lists the files the settings read, for a watcher that reloads
// them when they change.
func (s SSL) Files() []string {
	var out []string
	for _, f := range []string{s.KeystoreLocation, s.TruststoreLocation} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// SSLError is a problem with a listener's TLS material, naming the
// setting to fix.
type SSLError struct {
	Key string
	Err error
}

func (e *SSLError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *SSLError) Unwrap() error { return e.Err }

// Certificate reads the key store: the file, or the inline chain and key.
func (s SSL) Certificate() (tls.Certificate, error) {
	chainKey, keyKey := s.Key("ssl.keystore.certificate.chain"), s.Key("ssl.keystore.key")
	var chain, key []byte
	switch {
	case s.KeystoreLocation != "" && (s.KeystoreChain != "" || s.KeystoreKey != ""):
		return tls.Certificate{}, &SSLError{s.Key("ssl.keystore.location"),
			fmt.Errorf("set either it or %s with %s, not both", chainKey, keyKey)}
	case s.KeystoreLocation != "":
		data, err := readPEMFile(s.KeystoreLocation)
		if err != nil {
			return tls.Certificate{}, &SSLError{s.Key("ssl.keystore.location"), err}
		}
		chain, key = data, data
		chainKey, keyKey = s.Key("ssl.keystore.location"), s.Key("ssl.keystore.location")
	case s.KeystoreChain == "" && s.KeystoreKey == "":
		return tls.Certificate{}, &SSLError{s.Key("ssl.keystore.location"),
			fmt.Errorf("listener %s speaks TLS and needs a certificate: set it, or %s with %s", s.Listener, chainKey, keyKey)}
	case s.KeystoreChain == "":
		return tls.Certificate{}, &SSLError{chainKey, fmt.Errorf("%s is set but the certificate chain is empty", keyKey)}
	case s.KeystoreKey == "":
		return tls.Certificate{}, &SSLError{keyKey, fmt.Errorf("%s is set but the private key is empty", chainKey)}
	default:
		chain, key = []byte(s.KeystoreChain), []byte(s.KeystoreKey)
	}
	var certs [][]byte
	var keyDER []byte
	var keyBlock *pem.Block
	for rest := chain; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certs = append(certs, b.Bytes)
		}
	}
	for rest := key; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			if keyBlock != nil {
				return tls.Certificate{}, &SSLError{keyKey, errors.New("holds more than one private key")}
			}
			keyBlock = b
		}
	}
	if len(certs) == 0 {
		return tls.Certificate{}, &SSLError{chainKey, errors.New("holds no PEM CERTIFICATE block")}
	}
	if keyBlock == nil {
		return tls.Certificate{}, &SSLError{keyKey, errors.New("holds no PEM PRIVATE KEY block")}
	}
	keyDER = keyBlock.Bytes
	switch {
	case keyBlock.Type == "ENCRYPTED PRIVATE KEY":
		return tls.Certificate{}, &SSLError{keyKey, errors.New("the private key is encrypted PKCS#8, which wren cannot read: " +
			"decrypt it (openssl pkcs8 -in key.pem -out plain.pem) and protect the file instead")}
	//lint:ignore SA1019 legacy PEM encryption is what ssl.key.password can still open
	case x509.IsEncryptedPEMBlock(keyBlock): //nolint:staticcheck
		if s.KeyPassword == "" {
			return tls.Certificate{}, &SSLError{keyKey, fmt.Errorf("%w: set %s", errKeyEncrypted, s.Key("ssl.key.password"))}
		}
		der, err := x509.DecryptPEMBlock(keyBlock, []byte(s.KeyPassword)) //nolint:staticcheck
		if err != nil {
			return tls.Certificate{}, &SSLError{s.Key("ssl.key.password"), fmt.Errorf("does not decrypt the private key: %v", err)}
		}
		keyDER = der
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: keyBlock.Type, Bytes: keyDER})
	if keyBlock.Type != "RSA PRIVATE KEY" && keyBlock.Type != "EC PRIVATE KEY" {
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	}
	var chainPEM []byte
	for _, der := range certs {
		chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	cert, err := tls.X509KeyPair(chainPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, &SSLError{keyKey, fmt.Errorf("certificate and key do not make a key pair: %v", err)}
	}
	return cert, nil
}

// errKeyEncrypted is a private key in legacy PEM encryption with no
// ssl.key.password to open it.
var errKeyEncrypted = errors.New("the private key is encrypted")

// ClientCAs reads the trust store; nil when none is set.
func (s SSL) ClientCAs() (*x509.CertPool, error) {
	key := s.Key("ssl.truststore.location")
	var data []byte
	switch {
	case s.TruststoreLocation != "" && s.TruststoreCertificates != "":
		return nil, &SSLError{key, fmt.Errorf("set either it or %s, not both", s.Key("ssl.truststore.certificates"))}
	case s.TruststoreLocation != "":
		d, err := readPEMFile(s.TruststoreLocation)
		if err != nil {
			return nil, &SSLError{key, err}
		}
		data = d
	case s.TruststoreCertificates != "":
		key, data = s.Key("ssl.truststore.certificates"), []byte(s.TruststoreCertificates)
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, &SSLError{key, fmt.Errorf("certificate %d: %v", n+1, err)}
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, &SSLError{key, errors.New("holds no PEM CERTIFICATE block")}
	}
	return pool, nil
}

// maxPEMFileBytes caps a key or trust store file: no honest one comes near.
const maxPEMFileBytes = 4 << 20

func readPEMFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxPEMFileBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxPEMFileBytes)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("read %s: %v", path, err)
	}
	return data, nil
}

// BaseTLSConfig is a tls.Config with the settings' versions and cipher
// suites and no certificates: the base of the listeners' configs, and of
// both ends of the peers' mutual TLS.
func (s SSL) BaseTLSConfig() *tls.Config {
	tc := &tls.Config{
		MinVersion: tls.VersionTLS13,
		MaxVersion: tls.VersionTLS12,
		// Full 16 KiB records from the first byte: dynamic sizing starts
		// every burst after a second idle with 1 KiB records, for web
		// pages' first paint; Kafka's clients read whole responses.
		DynamicRecordSizingDisabled: true,
	}
	for _, p := range s.Protocols {
		v := uint16(tls.VersionTLS12)
		if p == "TLSv1.3" {
			v = tls.VersionTLS13
		}
		tc.MinVersion, tc.MaxVersion = min(tc.MinVersion, v), max(tc.MaxVersion, v)
	}
	if len(s.Protocols) == 0 {
		tc.MinVersion, tc.MaxVersion = tls.VersionTLS12, tls.VersionTLS13
	}
	for _, name := range s.CipherSuites {
		if id, ok := cipherSuiteID(name); ok && id != 0 {
			tc.CipherSuites = append(tc.CipherSuites, id)
		}
	}
	return tc
}

// TLSConfig builds a server tls.Config from the settings, with cert for
// every handshake's certificate and cas for client certificates (nil
// when ssl.client.auth is none). Reloading swaps what the two functions
// return; a handshake already done keeps what it got.
func (s SSL) TLSConfig(cert func() *tls.Certificate, cas func() *x509.CertPool) *tls.Config {
	tc := s.BaseTLSConfig()
	tc.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return cert(), nil
	}
	switch s.ClientAuth {
	case "requested":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if tc.ClientAuth != tls.NoClientCert {
		base := tc
		// The trust store may change between handshakes: each gets a
		// config carrying the CAs of the moment.
		tc = tc.Clone()
		tc.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			c.ClientCAs = cas()
			return c, nil
		}
	}
	return tc
}

// ControllerSSL returns the TLS settings of the CONTROLLER listener (the
// first of controller.listener.names), and whether it speaks SSL. Its
// client authentication is always required: every peer presents its
// certificate, on the connections it dials too.
func (c *Config) ControllerSSL() (SSL, bool) {
	if len(c.ControllerListenerNames) == 0 {
		return SSL{}, false
	}
	name := c.ControllerListenerNames[0]
	if c.ListenerProtocol(name) != ProtocolSSL {
		return SSL{}, false
	}
	s := c.ListenerSSL(name)
	s.ClientAuth = "required"
	return s, true
}

// checkControllerSSL checks the TLS material of an SSL controller
// listener: a certificate, a trust store (the peers' certificates must
// chain to it), and no client authentication weaker than required.
func (k *checker) checkControllerSSL(name string) {
	s := k.c.ListenerSSL(name)
	if s.ClientAuth != "required" {
		if key := s.Key("ssl.client.auth"); key != "ssl.client.auth" {
			k.failAt([]string{key, "listeners"}, "%s: the controller listener %s always requires the peers' certificates (mutual TLS); remove the setting or make it required",
				key, s.Listener)
			return
		}
	}
	if k.c.perNodeSSL {
		return
	}
	s.ClientAuth = "required"
	pool, ok := k.sslMaterial(s)
	if !ok {
		return
	}
	if pool == nil {
		k.failAt([]string{s.Key("ssl.truststore.location"), "listener.security.protocol.map", "listeners"}, "%s: the controller listener %s speaks mutual TLS and needs a trust store, the CA the peers' certificates chain to (%s or %s)",
			s.Key("ssl.truststore.location"), s.Listener, s.Key("ssl.truststore.location"), s.Key("ssl.truststore.certificates"))
	}
}

// sslMaterial loads s's certificate and trust store, failing the check
// at the setting that names a file that is missing or does not parse; ok
// is false when the trust store did not load.
func (k *checker) sslMaterial(s SSL) (pool *x509.CertPool, ok bool) {
	fail := func(err error) {
		var se *SSLError
		if errors.As(err, &se) {
			k.failAt([]string{se.Key, "listeners"}, "%s: %v", se.Key, se.Err)
		}
	}
	if _, err := s.Certificate(); err != nil {
		fail(err)
	}
	pool, err := s.ClientCAs()
	if err != nil {
		fail(err)
		return nil, false
	}
	return pool, true
}

// checkSSL checks the TLS material of every SSL listener: its files exist
// and parse, the key matches the certificate, and client authentication
// has a trust store.
func (k *checker) checkSSL(name string) {
	if k.c.perNodeSSL {
		return
	}
	s := k.c.ListenerSSL(name)
	pool, ok := k.sslMaterial(s)
	if !ok {
		return
	}
	if pool == nil && s.ClientAuth != "none" {
		k.failAt([]string{s.Key("ssl.client.auth"), "listeners"}, "%s: %s asks for client certificates on listener %s, but no trust store is set (%s or %s)",
			s.Key("ssl.client.auth"), s.ClientAuth, s.Listener, s.Key("ssl.truststore.location"), s.Key("ssl.truststore.certificates"))
	}
}

// sslWarnings warns about ssl.* settings the file gives that no listener
// uses: the operator believes clients are encrypted and they are not.
func (c *Config) sslWarnings() []Warning {
	ssl := map[string]bool{}
	for _, l := range c.Listeners {
		if p := c.ListenerProtocol(l.Name); p == ProtocolSSL || p == ProtocolSASLSSL {
			ssl[strings.ToLower(l.Name)] = true
		}
	}
	var out []Warning
	if len(ssl) == 0 {
		for _, key := range sslKeys {
			// A value that is the default (as `config dump --all`
			// writes every key) asks for nothing.
			if g, ok := c.given[key]; ok && g.source == SourceStaticBroker && !reflect.DeepEqual(g.value, c.defaults[key]) {
				out = append(out, Warning{File: c.file, Pos: g.pos, Key: key,
					Msg: fmt.Sprintf("%s has no effect: no listener is SSL or SASL_SSL (listeners, listener.security.protocol.map)", key)})
			}
		}
	}
	for name, values := range c.listenerSSL {
		if ssl[name] {
			continue
		}
		for key, g := range values {
			full := "listener.name." + name + "." + key
			out = append(out, Warning{File: c.file, Pos: g.pos, Key: full,
				Msg: fmt.Sprintf("%s has no effect: listener %s is not SSL or SASL_SSL", full, strings.ToUpper(name))})
		}
	}
	return out
}

// plaintextWarnings warns about a PLAINTEXT client listener bound to an
// address other hosts can reach while other client listeners are SSL or
// SASL: the operator secured the cluster, and this door lets any client in
// unauthenticated and unencrypted. Loopback binds are local tooling's and
// pass; controller listeners are the peers' and have their own rules.
func (c *Config) plaintextWarnings() []Warning {
	const key = "listeners"
	controller := func(name string) bool {
		return slices.ContainsFunc(c.ControllerListenerNames, func(n string) bool { return strings.EqualFold(n, name) })
	}
	var secured []string
	for _, l := range c.Listeners {
		if p := c.ListenerProtocol(l.Name); !controller(l.Name) && p != "" && p != ProtocolPlaintext {
			secured = append(secured, l.Name+" ("+p+")")
		}
	}
	g, set := c.given[key]
	if len(secured) == 0 || !set {
		return nil
	}
	var out []Warning
	for _, l := range c.Listeners {
		if controller(l.Name) || c.ListenerProtocol(l.Name) != ProtocolPlaintext || isLoopbackHost(l.Host) {
			continue
		}
		where := l.Host
		if where == "" || isWildcard(where) {
			where = "every interface"
		}
		out = append(out, Warning{File: c.file, Pos: g.pos, Key: key, Msg: fmt.Sprintf(
			"listeners: %s is PLAINTEXT on %s, while %s %s secured: any client that reaches it is served without TLS or authentication; "+
				"bind it to a loopback address, or make it SSL or SASL_SSL",
			l, where, strings.Join(secured, ", "), map[bool]string{true: "is", false: "are"}[len(secured) == 1])})
	}
	return out
}

// isLoopbackHost reports whether a listener's host is this machine only:
// a loopback IP or localhost.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dynamicSSLKeys are the ssl.* settings whose listener.name.NAME. form
// one broker's own layer may alter at run time: the key and trust stores,
// as Kafka's dynamic keystore update (KIP-226) allows. The listener's
// certificate is reloaded with them; client authentication, versions,
// suites and principal rules are read only at start.
var dynamicSSLKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
}

// ErrInvalidKeystore is why a run-time change of a listener's key or
// trust store is refused when the stores it names do not load.
var ErrInvalidKeystore = errors.New("config: key or trust store does not load")

// IsListenerKey reports whether a broker config name is a listener's own
// TLS setting, listener.name.NAME.ssl.x.
func IsListenerKey(name string) bool {
	_, _, ok := listenerKey(name)
	return ok
}

// listenerKey splits listener.name.NAME.ssl.x into the listener's name
// (lower case) and ssl.x; ok is false for any other name.
func listenerKey(name string) (listener, sub string, ok bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", "", false
	}
	listener, sub, ok = strings.Cut(rest, ".")
	if !ok || !validListenerName(listener) || !strings.HasPrefix(sub, "ssl.") {
		return "", "", false
	}
	return strings.ToLower(listener), sub, true
}

// parseListenerValue checks a run-time value of listener.name.NAME.ssl.x:
// only a key or trust store setting, only on one broker's own layer.
func parseListenerValue(name, sub, value string, perBroker bool) (any, error) {
	e, ok := byName[sub]
	switch {
	case !ok || !slices.Contains(sslKeys, sub):
		return nil, &AlterError{Err: ErrUnknownConfig, Message: "Unknown broker config name: " + name}
	case !slices.Contains(dynamicSSLKeys, sub):
		return nil, &AlterError{Err: ErrNotDynamic, Message: "Cannot update these configs dynamically: Set(" + name + ")"}
	case !perBroker:
		return nil, &AlterError{Err: ErrNotDynamic, Message: "Cannot update these configs at default cluster level, broker id must be specified: Set(" + name + ")"}
	}
	return parseChecked(name, e.Type, e.Validator, value)
}

// withDynamicListenerSSL lays the listener.name.NAME.ssl.* values of the
// run-time layers over the file's (the cluster-wide layer may hold none),
// and, when load is set, checks that the key and trust stores of each
// listener they change load: a store that does not is refused, so the
// certificate in use stays.
func (n *Config) withDynamicListenerSSL(clusterDefault, broker map[string]string, load bool) error {
	var changed []string
	for i, layer := range []map[string]string{clusterDefault, broker} {
		for _, name := range slices.Sorted(maps.Keys(layer)) {
			listener, sub, ok := listenerKey(name)
			if !ok {
				continue
			}
			v, err := parseListenerValue(name, sub, layer[name], i == 1)
			if err != nil {
				return err
			}
			if !slices.Contains(changed, listener) {
				if len(changed) == 0 {
					n.listenerSSL = maps.Clone(n.listenerSSL)
					if n.listenerSSL == nil {
						n.listenerSSL = map[string]map[string]given{}
					}
				}
				n.listenerSSL[listener] = maps.Clone(n.listenerSSL[listener])
				if n.listenerSSL[listener] == nil {
					n.listenerSSL[listener] = map[string]given{}
				}
				changed = append(changed, listener)
			}
			n.listenerSSL[listener][sub] = given{value: v, source: SourceDynamicBroker}
		}
	}
	for _, listener := range changed {
		if p := n.ListenerProtocol(listener); !load || p != ProtocolSSL && p != ProtocolSASLSSL {
			continue // check names a listener that is not SSL
		}
		s := n.ListenerSSL(listener)
		if _, err := s.Certificate(); err != nil {
			return &AlterError{Err: ErrInvalidKeystore, Message: err.Error()}
		}
		if _, err := s.ClientCAs(); err != nil {
			return &AlterError{Err: ErrInvalidKeystore, Message: err.Error()}
		}
	}
	return nil
}

// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: its value
// when set, else derived from the client listeners: false when one of
// them authenticates its clients (SASL_PLAINTEXT, SASL_SSL, or SSL with
// ssl.client.auth=required, the listener's own override included), true
// otherwise.
func (c *Config) AllowEveryoneIfNoACLFound() bool {
	if c.AllowEveryoneIfNoACL != nil {
		return *c.AllowEveryoneIfNoACL
	}
	for _, l := range c.Listeners {
		if slices.ContainsFunc(c.ControllerListenerNames, func(n string) bool { return strings.EqualFold(n, l.Name) }) {
			continue
		}
		switch c.ListenerProtocol(l.Name) {
		case ProtocolSASLPlaintext, ProtocolSASLSSL:
			return false
		case ProtocolSSL:
			if c.ListenerSSL(l.Name).ClientAuth == "required" {
				return false
			}
		}
	}
	return true
}
