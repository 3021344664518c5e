package broker

import (
	"encoding/base64"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/security/scram"
)

// The bootstrap admin given by a password in the environment is recorded
// on the first start and logs in over SCRAM; a restart with another
// password changes nothing (the credential is never replaced), and one
// given by bootstrap.admin.scram for a user that has a credential is not
// written either. DescribeUserScramCredentials (`wren user list`) shows
// the user.
func TestBootstrapAdmin(t *testing.T) {
	dir := t.TempDir()
	const security = "\n[security]\nbootstrap.admin.user = \"admin\"\n"
	t.Setenv(config.BootstrapAdminPasswordEnv, "first-password")
	b := startBroker(t, saslConfig(t, dir, security))
	_, adm := newClient(t, b)
	ctx := testContext(t)

	var iterations int32
	for iterations == 0 {
		described, err := adm.DescribeUserSCRAMs(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := described["admin"]; ok && d.Err == nil && len(d.CredInfos) == 2 {
			iterations = d.CredInfos[0].Iterations
		}
		if ctx.Err() != nil {
			t.Fatal("the bootstrap admin was not recorded")
		}
	}
	if iterations != bootstrapAdminIterations {
		t.Errorf("iterations %d, want %d", iterations, bootstrapAdminIterations)
	}
	login := func(b *Broker, password string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
			kgo.SASL(kscram.Auth{User: "admin", Pass: password}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.Ping(ctx)
	}
	if err := login(b, "first-password"); err != nil {
		t.Fatalf("the bootstrap admin's login: %v", err)
	}
	before, _ := b.Controller().Image().ScramCredential(scram.SHA512, "admin")
	offset := b.Controller().Image().Offset
	b.Close()

	// Another password in the environment: the credential stays.
	t.Setenv(config.BootstrapAdminPasswordEnv, "second-password")
	b = startBroker(t, saslConfig(t, dir, security))
	if err := login(b, "first-password"); err != nil {
		t.Fatalf("after a restart with another password, the first: %v", err)
	}
	if err := login(b, "second-password"); err == nil {
		t.Fatal("the restart's password replaced the credential")
	}
	after, _ := b.Controller().Image().ScramCredential(scram.SHA512, "admin")
	if string(after.StoredKey) != string(before.StoredKey) {
		t.Error("the stored credential changed across the restart")
	}
	b.Close()

	// A salted credential in the file, for the same user: not written.
	salt := []byte("0123456789abcdef")
	sp, err := scram.SHA512.SaltedPassword("third-password", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	fileCred := `bootstrap.admin.scram = 'SCRAM-SHA-512=[salt="` + base64.StdEncoding.EncodeToString(salt) +
		`",saltedpassword="` + base64.StdEncoding.EncodeToString(sp) + `",iterations=4096]'` + "\n"
	t.Setenv(config.BootstrapAdminPasswordEnv, "")
	if _, err := Start(saslConfig(t, dir, security+fileCred), Options{Logger: testLogger(t)}); err == nil {
		t.Fatal("a credential in the file and a password in the environment (even empty) were both taken")
	}
	unsetEnv(t, config.BootstrapAdminPasswordEnv)
	b = startBroker(t, saslConfig(t, dir, security+fileCred))
	if err := login(b, "first-password"); err != nil {
		t.Fatalf("with bootstrap.admin.scram for an existing user: %v", err)
	}
	if b.Controller().Image().Offset < offset {
		t.Errorf("image offset went back: %d < %d", b.Controller().Image().Offset, offset)
	}
}

// A salted credential in the file is recorded on a new cluster as given.
func TestBootstrapAdminFromFile(t *testing.T) {
	unsetEnv(t, config.BootstrapAdminPasswordEnv)
	salt := []byte("0123456789abcdef")
	sp, err := scram.SHA256.SaltedPassword("file-password", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	security := "\n[security]\nbootstrap.admin.user = \"root\"\nbootstrap.admin.scram = 'SCRAM-SHA-256=[name=root,salt=\"" +
		base64.StdEncoding.EncodeToString(salt) + "\",saltedpassword=\"" + base64.StdEncoding.EncodeToString(sp) + "\",iterations=4096]'\n"
	b := startBroker(t, saslConfig(t, t.TempDir(), security))
	ctx := testContext(t)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
			kgo.SASL(kscram.Auth{User: "root", Pass: "file-password"}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the file's bootstrap admin never logged in: %v", err)
		}
	}
}

// unsetEnv removes an environment variable for the test; it is restored
// after.
func unsetEnv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "")
	os.Unsetenv(name)
}
