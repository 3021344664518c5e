package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/kafka"
)

// boundListener is a client listener bound to its port.
type boundListener struct {
	ln       net.Listener
	spec     kafka.Listener
	protocol string
}

// defaultTLSReloadInterval is how often key and trust store files are
// checked for changes.
const defaultTLSReloadInterval = 5 * time.Second

// bindClientListeners binds every client listener, loads the TLS material
// of the SSL ones and starts their reloaders. On error nothing stays bound.
func (b *Broker) bindClientListeners(w *wiring) (bound []boundListener, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	b.tlsStop = cancel
	defer func() {
		if err != nil {
			for _, bl := range bound {
				bl.ln.Close()
			}
			b.stopTLS()
		}
	}()
	b.listeners = map[string]net.Listener{}
	b.certReloaders = map[string]*certReloader{}
	for _, l := range w.clients {
		proto := b.cfg.ListenerProtocol(l.name)
		spec := kafka.Listener{Name: l.name}
		if proto == config.ProtocolSASLPlaintext || proto == config.ProtocolSASLSSL {
			// Credentials are looked up in the metadata image at each
			// authentication (SCRAM credentials are metadata records).
			spec.SASL = kafka.SASLConfigFrom(b.cfg, kafka.ImageAuthenticator(b.controller))
		}
		switch proto {
		case config.ProtocolPlaintext, config.ProtocolSASLPlaintext:
		case config.ProtocolSSL, config.ProtocolSASLSSL:
			r, err := newCertReloader(b.cfg.ListenerSSL(l.name), b.logger, nil)
			if err != nil {
				return bound, fmt.Errorf("broker: listener %s: %w", l.name, err)
			}
			b.certReloaders[l.name] = r
			spec.TLS = r.tlsConfig()
			// A client certificate's subject names the principal through
			// the listener's ssl.principal.mapping.rules.
			spec.MapPrincipal = b.cfg.ListenerSSL(l.name).MapPrincipal
			interval := w.o.TLSReloadInterval
			if interval <= 0 {
				interval = defaultTLSReloadInterval
			}
			b.tlsDone.Add(1)
			go func() {
				defer b.tlsDone.Done()
				r.run(ctx, interval)
			}()
		default:
			// config check refuses these; a config built another way
			// must not start a listener in the wrong protocol.
			return bound, fmt.Errorf("broker: listener %s: security protocol %q is not supported", l.name, proto)
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return bound, fmt.Errorf("broker: %w", err) // net names the address
		}
		spec.Host, spec.Port = advertised(b.cfg, l, ln.Addr())
		bound = append(bound, boundListener{ln: ln, spec: spec, protocol: proto})
		b.listeners[l.name] = ln
		if b.listener == nil {
			b.listener = ln
		}
	}
	return bound, nil
}

// runReloader runs r (nil: nothing) every interval (0: the default)
// until the returned function is called, which waits for it to end.
func runReloader(r *certReloader, interval time.Duration) (stop func()) {
	if r == nil {
		return func() {}
	}
	if interval <= 0 {
		interval = defaultTLSReloadInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, interval)
	}()
	return func() {
		cancel()
		<-done
	}
}

// stopTLS ends the certificate reloaders and waits for them.
func (b *Broker) stopTLS() {
	if b.tlsStop != nil {
		b.tlsStop()
	}
	b.tlsDone.Wait()
}

// serveAll serves every bound listener until the server closes; the first
// error wins.
func (b *Broker) serveAll(bound []boundListener) error {
	errs := make(chan error, len(bound))
	for _, bl := range bound[1:] {
		go func() { errs <- b.server.ServeListener(bl.ln, bl.spec) }()
	}
	err := b.server.ServeListener(bound[0].ln, bound[0].spec)
	for range bound[1:] {
		if e := <-errs; err == nil || err == kafka.ErrServerClosed {
			err = e
		}
	}
	return err
}

// certReloader holds an SSL listener's certificate and trust store and
// reloads them when their files change (Kafka's dynamic keystore update,
// KIP-226, driven by the files): new handshakes get the new ones, open
// connections keep theirs.
type certReloader struct {
	// mu orders the file checks and the run-time changes of the stores
	// (applyDynamicSSL); it guards ssl, sum and failed.
	mu     sync.Mutex
	ssl    config.SSL
	logger *slog.Logger
	// vet, if set, checks a certificate before it is used: one it refuses
	// fails the start, or keeps the previous one at a reload.
	vet  func(*tls.Certificate) error
	cert atomic.Pointer[tls.Certificate]
	cas  atomic.Pointer[x509.CertPool]
	// sum is the hash of the files' contents last loaded; failed the
	// hash that last failed to load, so a broken file is logged once.
	sum, failed []byte
}

func newCertReloader(s config.SSL, logger *slog.Logger, vet func(*tls.Certificate) error) (*certReloader, error) {
	r := &certReloader{ssl: s, logger: logger, vet: vet}
	sum, err := r.hashFiles()
	if err != nil {
		return nil, err
	}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.sum = sum
	return r, nil
}

// load reads the certificate and trust store and swaps them in.
func (r *certReloader) load() error {
	cert, err := r.ssl.Certificate()
	if err != nil {
		return err
	}
	cas, err := r.ssl.ClientCAs()
	if err != nil {
		return err
	}
	if r.vet != nil {
		if err := r.vet(&cert); err != nil {
			return &config.SSLError{Key: r.ssl.Key("ssl.keystore.location"), Err: err}
		}
	}
	r.cert.Store(&cert)
	r.cas.Store(cas)
	return nil
}

func (r *certReloader) tlsConfig() *tls.Config {
	return r.ssl.TLSConfig(r.cert.Load, r.cas.Load)
}

// hashFiles hashes the contents of the files the settings read.
func (r *certReloader) hashFiles() ([]byte, error) {
	h := sha256.New()
	for _, f := range r.ssl.Files() {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return h.Sum(nil), nil
}

// run checks the files every interval until ctx ends.
func (r *certReloader) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.check()
		}
	}
}

// check reloads when the files' contents changed. A file half written or
// wrong keeps the old certificate (logged once per content) and is tried
// again at the next check.
func (r *certReloader) check() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ssl.Files()) == 0 {
		return // inline PEM: nothing to watch
	}
	sum, err := r.hashFiles()
	if err == nil && bytes.Equal(sum, r.sum) {
		return
	}
	if err == nil {
		err = r.load()
	}
	if err != nil {
		if sum == nil || !bytes.Equal(sum, r.failed) {
			r.logger.Warn("TLS certificate not reloaded; the previous one stays in use", "listener", r.ssl.Listener, "err", err)
			r.failed = sum
		}
		return
	}
	r.sum, r.failed = sum, nil
	leaf := r.cert.Load().Leaf
	attrs := []any{"listener", r.ssl.Listener, "files", strings.Join(r.ssl.Files(), ",")}
	if leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	r.logger.Info("TLS certificate reloaded", attrs...)
}

// applyDynamicSSL puts the key and trust stores of the image's run-time
// broker configs (listener.name.NAME.ssl.*, set with AlterConfigs or
// IncrementalAlterConfigs) in force on each SSL listener: Kafka's dynamic
// keystore update. New handshakes get the new certificate; open
// connections keep theirs. The stores were loaded when the change was
// accepted; if they no longer load here, the listener keeps its
// certificate and says so. It runs on the controller's subscription.
func (b *Broker) applyDynamicSSL(im *cluster.Image) {
	if len(b.certReloaders) == 0 {
		return
	}
	eff, err := b.cfg.WithDynamic(dynamicConfigs(b.cfg, im))
	if err != nil {
		b.logger.Error("dynamic TLS settings do not apply; the listeners keep their certificates", "err", err)
		return
	}
	for name, r := range b.certReloaders {
		r.update(eff.ListenerSSL(name))
	}
}

// update switches to other store settings when they differ from the ones
// in use, loading them first; settings that do not load leave the
// current certificate in place.
func (r *certReloader) update(s config.SSL) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sameStores(r.ssl, s) {
		return
	}
	next := &certReloader{ssl: s, logger: r.logger}
	sum, err := next.hashFiles()
	if err == nil {
		err = next.load()
	}
	if err != nil {
		r.logger.Error("TLS settings altered at run time do not load; the previous certificate stays in use", "listener", s.Listener, "err", err)
		return
	}
	r.ssl, r.sum, r.failed = s, sum, nil
	r.cert.Store(next.cert.Load())
	r.cas.Store(next.cas.Load())
	attrs := []any{"listener", s.Listener}
	if leaf := r.cert.Load().Leaf; leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	r.logger.Info("TLS key and trust stores altered at run time are in use", attrs...)
}

// sameStores reports whether two settings name the same key and trust
// stores.
func sameStores(a, b config.SSL) bool {
	return a.KeystoreLocation == b.KeystoreLocation && a.KeystoreChain == b.KeystoreChain && a.KeystoreKey == b.KeystoreKey &&
		a.KeyPassword == b.KeyPassword && a.TruststoreLocation == b.TruststoreLocation && a.TruststoreCertificates == b.TruststoreCertificates
}
