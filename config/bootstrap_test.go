package config

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// bootstrap.admin.scram is kafka-storage's --add-scram form, salted only:
// a password, a bad field or a credential of no user is refused at load
// with the key and line.
func TestBootstrapAdminConfig(t *testing.T) {
	salt := base64.StdEncoding.EncodeToString([]byte("salt"))
	sp512 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 64))
	good := `SCRAM-SHA-512=[name=admin,salt="` + salt + `",saltedpassword="` + sp512 + `",iterations=8192]`
	c, err := Parse("config.toml", []byte("[security]\nbootstrap.admin.user = \"admin\"\nbootstrap.admin.scram = '"+good+"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec, ok := c.BootstrapAdminScram()
	if !ok || spec.Mechanism != "SCRAM-SHA-512" || spec.Iterations != 8192 || string(spec.Salt) != "salt" || len(spec.SaltedPassword) != 64 {
		t.Errorf("BootstrapAdminScram = %+v, %v", spec, ok)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"password", "[security]\nbootstrap.admin.user = \"admin\"\nbootstrap.admin.scram = 'SCRAM-SHA-512=[password=secret]'\n",
			"config.toml:3:25: bootstrap.admin.scram: invalid value"},
		{"short salted password", "[security]\nbootstrap.admin.user = \"admin\"\nbootstrap.admin.scram = 'SCRAM-SHA-256=[salt=\"" + salt + "\",saltedpassword=\"" + sp512 + "\",iterations=4096]'\n",
			"a SCRAM-SHA-256 saltedpassword has 32 bytes, not 64"},
		{"iterations", "[security]\nbootstrap.admin.user = \"admin\"\nbootstrap.admin.scram = 'SCRAM-SHA-512=[salt=\"" + salt + "\",saltedpassword=\"" + sp512 + "\",iterations=100]'\n",
			"iterations 100 is outside [4096, 16384]"},
		{"no user", "[security]\nbootstrap.admin.scram = '" + good + "'\n",
			"config.toml:2:1: bootstrap.admin.scram is set but bootstrap.admin.user is not"},
		{"another user", "[security]\nbootstrap.admin.user = \"root\"\nbootstrap.admin.scram = '" + good + "'\n",
			`config.toml:3:1: bootstrap.admin.scram names user "admin", but bootstrap.admin.user is "root"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("config.toml", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error repeats the password: %v", err)
			}
		})
	}
}
