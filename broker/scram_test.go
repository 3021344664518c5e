package broker

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/security/scram"
)

// SCRAM credentials (KIP-554) through kadm, as `kafka-configs
// --entity-type users` and `wren user` manage them.

// checkPassword reports whether the credentials in im accept user's
// password over PLAIN: the stored keys are the ones of that password.
func checkPassword(t *testing.T, im *cluster.Image, user, password string) error {
	t.Helper()
	a, err := scram.New(scram.Config{Lookup: im.ScramCredential, Secret: bytes.Repeat([]byte{9}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Plain([]byte("\x00" + user + "\x00" + password))
	return err
}

// TestScramCredentialsOneNode: kadm creates credentials from passwords
// (it salts them itself), describes them, gets Kafka's codes for what is
// refused, deletes one; the stored keys check the password; and they
// survive a restart.
func TestScramCredentialsOneNode(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, adm := newClient(t, b)
	ctx := testContext(t)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-pw"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-pw"},
	})
	if err != nil || !altered.Ok() || len(altered) != 2 {
		t.Fatalf("create: %v %+v", err, altered)
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || !described.Ok() {
		t.Fatalf("describe: %v %+v", err, described)
	}
	if a := described["alice"]; len(a.CredInfos) != 1 || a.CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 8192}) {
		t.Errorf("alice: %+v", a)
	}
	if err := checkPassword(t, b.Controller().Image(), "alice", "alice-pw"); err != nil {
		t.Errorf("alice's stored credential does not check her password: %v", err)
	}
	if err := checkPassword(t, b.Controller().Image(), "alice", "bob-pw"); err == nil {
		t.Error("alice's stored credential checks bob's password")
	}

	// Refused: iterations out of bounds (salted by hand, kadm refuses to
	// salt them), a user twice.
	sp, _ := scram.SHA256.SaltedPassword("x", []byte("salt"), 1000)
	altered, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 1000, Salt: []byte("salt"), SaltedPassword: sp},
		{User: "dave", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "d"},
		{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "d"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(altered["carol"].Err, kerr.UnacceptableCredential) || !errors.Is(altered["dave"].Err, kerr.DuplicateResource) {
		t.Errorf("refusals: %+v", altered)
	}

	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || !altered.Ok() {
		t.Fatalf("delete bob: %v %+v", err, altered)
	}
	described, err = adm.DescribeUserSCRAMs(ctx, "bob", "carol")
	if err != nil || !errors.Is(described["bob"].Err, kerr.ResourceNotFound) || !errors.Is(described["carol"].Err, kerr.ResourceNotFound) {
		t.Fatalf("bob and carol after the delete: %v %+v", err, described)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, testConfig(t, dir, ""))
	_, adm = newClient(t, b)
	described, err = adm.DescribeUserSCRAMs(ctx)
	if err != nil || !described.Ok() || len(described) != 1 || len(described["alice"].CredInfos) != 1 {
		t.Fatalf("after the restart: %v %+v", err, described)
	}
	if err := checkPassword(t, b.Controller().Image(), "alice", "alice-pw"); err != nil {
		t.Errorf("after the restart alice's credential does not check her password: %v", err)
	}
}

// TestScramCredentialsThreeNodes: a credential created through a node
// that is not the controller (forwarded) is described by every node,
// its stored keys the same on each; its delete, through another node,
// too.
func TestScramCredentialsThreeNodes(t *testing.T) {
	brokers := startThreeBrokersWith(t, "")
	cl, adm := threeNodeAdmin(t, brokers)
	ctx := testContext(t)
	ctrl := actingController(t, brokers).Controller().NodeID()
	var other, third int32 = -1, -1
	for _, b := range brokers {
		if id := b.Controller().NodeID(); id != ctrl && other < 0 {
			other = id
		} else if id != ctrl {
			third = id
		}
	}
	// Alter through a node that forwards it (pinned; kadm would pick).
	alter := func(at int32, req *kmsg.AlterUserSCRAMCredentialsRequest) {
		t.Helper()
		resp, err := req.RequestWith(ctx, cl.Broker(int(at)))
		if err != nil {
			t.Fatalf("alter through node %d: %v", at, err)
		}
		for _, r := range resp.Results {
			if r.ErrorCode != 0 {
				t.Fatalf("alter through node %d: %s: %v", at, r.User, kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt = "edge-device", int8(scram.SHA512), 8192, []byte("a salt of 24 bytes......")
	up.SaltedPassword, _ = scram.SHA512.SaltedPassword("device-pw", up.Salt, 8192)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, up)
	alter(other, req)

	describeAt := func(id int32) *kmsg.DescribeUserSCRAMCredentialsResponse {
		t.Helper()
		resp, err := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest().RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			t.Fatalf("describe at node %d: %v", id, err)
		}
		return resp
	}
	for _, b := range brokers {
		id := b.Controller().NodeID()
		pollFor(t, "the credential described by every node", 10*time.Second, func() bool {
			r := describeAt(id)
			return len(r.Results) == 1 && r.Results[0].User == "edge-device" && len(r.Results[0].CredentialInfos) == 1 &&
				r.Results[0].CredentialInfos[0].Iterations == 8192
		})
		if err := checkPassword(t, b.Controller().Image(), "edge-device", "device-pw"); err != nil {
			t.Errorf("node %d's credential does not check the password: %v", id, err)
		}
	}
	described, err := adm.DescribeUserSCRAMs(ctx, "edge-device")
	if err != nil || !described.Ok() {
		t.Fatalf("kadm describe: %v %+v", err, described)
	}

	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "edge-device", int8(scram.SHA512)
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = append(req.Deletions, del)
	alter(third, req)
	for _, b := range brokers {
		id := b.Controller().NodeID()
		pollFor(t, "the delete seen by every node", 10*time.Second, func() bool { return len(describeAt(id).Results) == 0 })
	}
}
