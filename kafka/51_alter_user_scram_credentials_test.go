package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/security/scram"
)

// scramController makes f's controller decide with the real rule on the
// fixture's image and commit into it.
func scramController(t *testing.T, f *seamFixture) {
	f.controller.scram = func(req cluster.AlterScramRequest) ([]cluster.ScramResult, error) {
		r := cluster.DecideAlterScramCredentials(f.metadata.image, cluster.RuleConfig{}, req)
		f.addRecords(t, r.Records...)
		return r.Response, r.Err
	}
}

func upsertion(t *testing.T, user string, m scram.Mechanism, iterations int32, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	t.Helper()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = user, int8(m), iterations, []byte("salt-"+user)
	hm := m
	if !hm.Valid() {
		hm = scram.SHA256
	}
	sp, err := hm.SaltedPassword(password, u.Salt, max(iterations, 1))
	if err != nil {
		t.Fatal(err)
	}
	u.SaltedPassword = sp
	return u
}

func deletion(user string, m scram.Mechanism) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, int8(m)
	return d
}

func describeScram(t *testing.T, f *seamFixture, users ...string) *kmsg.DescribeUserSCRAMCredentialsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	return onWire(t, f.do(t, req).(*kmsg.DescribeUserSCRAMCredentialsResponse))
}

// credInfos prints a describe result's credentials as MECH:ITERATIONS.
func credInfos(r kmsg.DescribeUserSCRAMCredentialsResponseResult) string {
	s := ""
	for _, ci := range r.CredentialInfos {
		s += fmt.Sprintf("%d:%d ", ci.Mechanism, ci.Iterations)
	}
	return s
}

// TestAlterAndDescribeUserScramCredentials: upserts and deletes reach the
// controller as sent (the salted password with them) and each user gets
// its result, with Kafka's codes; Describe answers from the image the
// changes were committed to, every user or those named, with Kafka's
// codes for unknown and repeated users.
func TestAlterAndDescribeUserScramCredentials(t *testing.T) {
	f := newSeamFixture(t)
	scramController(t, f)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions,
		upsertion(t, "alice", scram.SHA512, 8192, "pw"),
		upsertion(t, "bob", scram.SHA256, 4096, "pw"),
		upsertion(t, "carol", scram.SHA256, 4095, "pw"),
		upsertion(t, "dave", scram.SHA256, 16385, "pw"),
		upsertion(t, "erin", scram.Mechanism(3), 4096, "pw"),
		upsertion(t, "frank", scram.SHA256, 4096, "pw"),
		upsertion(t, "frank", scram.SHA512, 4096, "pw"))
	req.Deletions = append(req.Deletions, deletion("ghost", scram.SHA256))
	resp := onWire(t, f.do(t, req).(*kmsg.AlterUserSCRAMCredentialsResponse))
	want := map[string]*kerr.Error{"ghost": kerr.ResourceNotFound, "alice": nil, "bob": nil, "carol": kerr.UnacceptableCredential,
		"dave": kerr.UnacceptableCredential, "erin": kerr.UnsupportedSaslMechanism, "frank": kerr.DuplicateResource}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Results), len(want), resp.Results)
	}
	for i, r := range resp.Results {
		if i == 0 && r.User != "ghost" {
			t.Errorf("the first result is %s, want ghost (deletions first)", r.User)
		}
		wantCode(t, r.User, r.ErrorCode, want[r.User])
	}
	wantMessage(t, "carol", resp.Results[3].ErrorMessage, "Too few iterations")
	call := f.controller.scramCalls[0]
	if u := call.Upsertions[0]; u.User != "alice" || u.Mechanism != scram.SHA512 || u.Iterations != 8192 || len(u.SaltedPassword) != 64 {
		t.Errorf("the controller was asked %+v", u)
	}

	all := describeScram(t, f)
	wantCode(t, "describe all", all.ErrorCode, nil)
	if len(all.Results) != 2 || all.Results[0].User != "alice" || credInfos(all.Results[0]) != "2:8192 " ||
		all.Results[1].User != "bob" || credInfos(all.Results[1]) != "1:4096 " {
		t.Errorf("describe all: %+v", all.Results)
	}
	some := describeScram(t, f, "bob", "nobody", "alice", "alice")
	if len(some.Results) != 3 {
		t.Fatalf("describe bob, nobody, alice twice: %+v", some.Results)
	}
	wantCode(t, "bob", some.Results[0].ErrorCode, nil)
	wantCode(t, "nobody", some.Results[1].ErrorCode, kerr.ResourceNotFound)
	wantMessage(t, "nobody", some.Results[1].ErrorMessage, "Attempt to describe a user credential that does not exist: nobody")
	wantCode(t, "alice twice", some.Results[2].ErrorCode, kerr.DuplicateResource)

	// Delete alice's credential: she is gone.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = append(req.Deletions, deletion("alice", scram.SHA512))
	resp = onWire(t, f.do(t, req).(*kmsg.AlterUserSCRAMCredentialsResponse))
	wantCode(t, "delete alice", resp.Results[0].ErrorCode, nil)
	gone := describeScram(t, f, "alice")
	wantCode(t, "alice deleted", gone.Results[0].ErrorCode, kerr.ResourceNotFound)
}

// TestAlterUserScramCredentialsNotController: refused as a whole, every
// user gets NOT_CONTROLLER, once.
func TestAlterUserScramCredentialsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, upsertion(t, "alice", scram.SHA256, 4096, "pw"))
	req.Deletions = append(req.Deletions, deletion("bob", scram.SHA256), deletion("alice", scram.SHA512))
	resp := f.do(t, req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if len(resp.Results) != 2 || resp.Results[0].User != "bob" || resp.Results[1].User != "alice" {
		t.Fatalf("results %+v, want bob then alice", resp.Results)
	}
	for _, r := range resp.Results {
		wantCode(t, r.User, r.ErrorCode, kerr.NotController)
	}
}
