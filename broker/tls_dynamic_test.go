package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/testcert"
)

// Kafka's dynamic keystore update: IncrementalAlterConfigs sets
// listener.name.ssl.ssl.keystore.location on this broker, and new TLS
// clients get the new certificate while a connection opened before keeps
// working. A key store that does not load is INVALID_CONFIG and the
// certificate in use stays; the cluster-wide layer and the settings read
// only at start are refused.
func TestDynamicKeystoreUpdate(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	b := tlsBroker(t, ca, serverKeystore(t, ca, "first"), "none")
	_, adm := newClient(t, b)
	ctx := testContext(t)
	addr := b.ListenerAddr("SSL").String()
	dial := func() *tls.Conn {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	served := func() string {
		c := dial()
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	alter := func(key, value string, brokers ...int32) (kerr.Error, string) {
		t.Helper()
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kmsg.StringPtr(value)}}, brokers...)
		if err != nil {
			t.Fatal(err)
		}
		var ke *kerr.Error
		if errors.As(rs[0].Err, &ke) {
			return *ke, rs[0].ErrMessage
		}
		if rs[0].Err != nil {
			t.Fatalf("alter %s: %v", key, rs[0].Err)
		}
		return kerr.Error{}, ""
	}

	old := dial()
	defer old.Close()
	if err := roundTrip(old, 1); err != nil {
		t.Fatal(err)
	}
	if cn := old.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "first" {
		t.Fatalf("first certificate is %q", cn)
	}

	second := serverKeystore(t, ca, "second")
	const key = "listener.name.ssl.ssl.keystore.location"
	if code, msg := alter(key, second, 1); code.Code != 0 {
		t.Fatalf("alter %s: %s %s", key, code.Message, msg)
	}
	pollFor(t, "the altered certificate on a new connection", 20*time.Second, func() bool { return served() == "second" })
	if err := roundTrip(old, 2); err != nil {
		t.Fatalf("the connection opened before the change: %v", err)
	}
	// Described as this broker's dynamic config.
	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	described := false
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			described = described || c.Key == key && c.MaybeValue() == second && c.Source == kmsg.ConfigSourceDynamicBrokerConfig
		}
	}
	if !described {
		t.Errorf("%s=%s not described as a dynamic broker config", key, second)
	}

	// A key store that does not load: INVALID_CONFIG, nothing changes.
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{garbage, filepath.Join(t.TempDir(), "missing.pem")} {
		if code, msg := alter(key, bad, 1); code.Code != kerr.InvalidConfig.Code {
			t.Errorf("a key store that does not load (%s): %s %s, want INVALID_CONFIG", bad, code.Message, msg)
		}
	}
	// Cluster-wide, or a setting read only at start: refused.
	if code, _ := alter(key, second); code.Code == 0 {
		t.Error("a listener's key store set cluster-wide was accepted")
	}
	if code, _ := alter("listener.name.ssl.ssl.client.auth", "required", 1); code.Code == 0 {
		t.Error("ssl.client.auth was accepted at run time")
	}
	if cn := served(); cn != "second" {
		t.Fatalf("after refused changes, served %q", cn)
	}
	if err := roundTrip(old, 3); err != nil {
		t.Fatalf("the first connection after the refusals: %v", err)
	}

	// The change is in the metadata log: a new key store file in place
	// of the altered one is watched as the file's was.
	third, thirdKey := ca.Issue(t, "third", x509.ExtKeyUsageServerAuth)
	writeAtomically(t, second, append(third, thirdKey...))
	pollFor(t, "the altered key store's file reloaded", 20*time.Second, func() bool { return served() == "third" })
}

// In a three-node cluster, a broker that is not the controller loads the
// key store a change names itself, before forwarding it (the files are
// its own): one that does not load is INVALID_CONFIG; one that loads is
// committed by the controller and served by that broker's SSL listener.
func TestDynamicKeystoreUpdateForwarded(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	brokers := startThreeNodes(t, func(id int, text string) string {
		text = strings.Replace(text, `listeners = ["PLAINTEXT://127.0.0.1:0", `, `listeners = ["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0", `, 1)
		return text + fmt.Sprintf("[security]\nssl.keystore.location = %q\n", serverKeystore(t, ca, fmt.Sprintf("node-%d-first", id)))
	}, nil)
	var target *Broker
	for _, b := range brokers {
		if !b.Controller().Acting() {
			target = b
			break
		}
	}
	id := target.Controller().NodeID()
	_, adm := threeNodeAdmin(t, brokers)
	ctx := testContext(t)
	const key = "listener.name.ssl.ssl.keystore.location"
	alter := func(value string) (int16, string) {
		t.Helper()
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kmsg.StringPtr(value)}}, id)
		if err != nil {
			t.Fatal(err)
		}
		var ke *kerr.Error
		if errors.As(rs[0].Err, &ke) {
			return ke.Code, rs[0].ErrMessage
		}
		if rs[0].Err != nil {
			t.Fatalf("alter: %v", rs[0].Err)
		}
		return 0, ""
	}
	addr := target.ListenerAddr("SSL").String()
	served := func() string {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}

	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, msg := alter(garbage); code != kerr.InvalidConfig.Code {
		t.Fatalf("a key store that does not load, through node %d: code %d %s, want INVALID_CONFIG", id, code, msg)
	}
	want := fmt.Sprintf("node-%d-second", id)
	if code, msg := alter(serverKeystore(t, ca, want)); code != 0 {
		t.Fatalf("alter through node %d: code %d %s", id, code, msg)
	}
	pollFor(t, "the altered certificate on the target's listener", 20*time.Second, func() bool { return served() == want })
}
