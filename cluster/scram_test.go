package cluster

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wren-broker/wren/security/scram"
)

// scramImage is an image where alice has a SCRAM-SHA-512 credential of
// password "pw" and bob a SCRAM-SHA-256 one, made by the rule.
func scramImage(t *testing.T) *Image {
	t.Helper()
	var ups []ScramUpsertion
	for _, u := range []struct {
		user string
		m    scram.Mechanism
	}{{"alice", scram.SHA512}, {"bob", scram.SHA256}} {
		sp, err := u.m.SaltedPassword("pw", []byte("salt"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, ScramUpsertion{User: u.user, Mechanism: u.m, Iterations: 4096, Salt: []byte("salt"), SaltedPassword: sp})
	}
	r := DecideAlterScramCredentials(emptyImage(), RuleConfig{}, AlterScramRequest{Upsertions: ups})
	if len(r.Records) != 2 {
		t.Fatalf("the rule: %+v", r)
	}
	b, err := json.Marshal(r.Records)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	im, err := applyRecords(emptyImage(), 1, recs)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// TestScramCredentialsAuthenticate: the credentials the rule derives from
// salted passwords, through the record codec and the image, check the
// password the salted passwords came from, and keep no salted password.
func TestScramCredentialsAuthenticate(t *testing.T) {
	im := scramImage(t)
	a, err := scram.New(scram.Config{Lookup: im.ScramCredential, Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alice", "bob"} {
		if got, err := a.Plain([]byte("\x00" + user + "\x00pw")); err != nil || got != user {
			t.Errorf("%s: %q %v", user, got, err)
		}
		if _, err := a.Plain([]byte("\x00" + user + "\x00pw2")); err == nil {
			t.Errorf("%s: a wrong password passed", user)
		}
	}
	want, _ := scram.SHA512.NewCredential("pw", []byte("salt"), 4096)
	got, ok := im.ScramCredential(scram.SHA512, "alice")
	if !ok || !bytes.Equal(got.ServerKey, want.ServerKey) || !bytes.Equal(got.StoredKey, want.StoredKey) {
		t.Errorf("alice's credential %+v, want %+v", got, want)
	}
	sp, _ := scram.SHA512.SaltedPassword("pw", []byte("salt"), 4096)
	enc, _ := encodeImage(im)
	if bytes.Contains(enc, sp) || strings.Contains(string(enc), base64.StdEncoding.EncodeToString(sp)) {
		t.Error("the image holds the salted password")
	}
}

// TestScramSnapshot: credentials survive a snapshot; a snapshot with a
// credential listed twice, or one that is not a credential, is refused.
func TestScramSnapshot(t *testing.T) {
	im := scramImage(t)
	b, err := encodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeImage(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := encodeImage(back)
	if !bytes.Equal(b, again) {
		t.Fatalf("the snapshot changed through decoding:\n%s\n%s", b, again)
	}
	if infos := back.ScramInfos("alice"); len(infos) != 1 || infos[0] != (ScramInfo{scram.SHA512, 4096}) {
		t.Errorf("alice after the snapshot: %+v", infos)
	}
	recs := im.scramRecords()
	for name, bad := range map[string][]ScramCredentialRecord{
		"twice":       {recs[0], recs[0]},
		"no keys":     {{User: "x", Mechanism: "SCRAM-SHA-256"}},
		"mechanism":   {{User: "x", Mechanism: "SCRAM-MD5", Credential: recs[1].Credential}},
		"short key":   {{User: "x", Mechanism: "SCRAM-SHA-512", Credential: recs[1].Credential}},
		"no username": {{Mechanism: "SCRAM-SHA-256", Credential: recs[1].Credential}},
	} {
		s := imageSnapshot{Version: imageSnapshotVersion, ScramCredentials: bad}
		data, _ := json.Marshal(s)
		if _, err := decodeImage(data); err == nil {
			t.Errorf("%s: a snapshot with %+v decoded", name, bad)
		}
	}
}

// TestScramRecordBody: a scram_credential record carries its own body
// and no other; a delete of a credential that does not exist does not
// apply.
func TestScramRecordBody(t *testing.T) {
	for _, body := range []string{
		`{"kind":"scram_credential"}`,
		`{"kind":"scram_credential","cluster":{"cluster_id":"c"}}`,
		`{"kind":"cluster","scram_credential":{"user":"u","mechanism":"SCRAM-SHA-256","credential":null}}`,
		`{"kind":"scram_credential","scram_credential":{"user":"u","mechanism":"SCRAM-SHA-256"},"cluster":{"cluster_id":"c"}}`,
	} {
		if _, err := decodeRecord([]byte(body)); err == nil {
			t.Errorf("%s decoded", body)
		}
	}
	r, err := decodeRecord([]byte(`{"kind":"scram_credential","scram_credential":{"user":"u","mechanism":"SCRAM-SHA-256","credential":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applyRecords(emptyImage(), 1, []Record{r}); err == nil {
		t.Error("the delete of a credential that does not exist applied")
	}
}
