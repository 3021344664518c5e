package broker

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
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
// survive a restart. ApiVersions lists both APIs.
func TestScramCredentialsOneNode(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	cl, adm := newClient(t, b)
	ctx := testContext(t)
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[int16]bool{}
	for _, k := range versions.ApiKeys {
		listed[k.ApiKey] = k.MinVersion == 0 && k.MaxVersion == 0
	}
	if !listed[int16(kmsg.DescribeUserSCRAMCredentials)] || !listed[int16(kmsg.AlterUserSCRAMCredentials)] {
		t.Errorf("ApiVersions does not list DescribeUserScramCredentials and AlterUserScramCredentials v0: %+v", versions.ApiKeys)
	}
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
// its stored keys the same on each; the credentials survive a restart of
// the whole cluster; a delete through another node, and a credential
// kadm creates, are seen by every node.
func TestScramCredentialsThreeNodes(t *testing.T) {
	ports := freePorts(t, 3)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	brokers := make([]*Broker, 3)
	t.Cleanup(func() {
		for _, b := range brokers {
			if b != nil {
				b.Close()
			}
		}
	})
	start := func() {
		t.Helper()
		for i := range brokers {
			cfg, err := config.Parse(fmt.Sprintf("node%d.toml", i+1), []byte(quorumConfigText(i+1, filepath.Join(dirs[i], "data"), ports)))
			if err != nil {
				t.Fatal(err)
			}
			if brokers[i], err = Start(cfg, Options{Logger: testLogger(t)}); err != nil {
				t.Fatalf("start node %d: %v", i+1, err)
			}
		}
		pollFor(t, "one controller known to all, three brokers registered", 20*time.Second, func() bool {
			ctrl := brokers[0].Controller().ControllerID()
			for _, b := range brokers {
				if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
					return false
				}
			}
			return true
		})
	}
	start()
	ctx := testContext(t)
	// request sends req straight to node id, at the address it listens
	// on now (the Kafka listeners' ports change at a restart).
	request := func(id int32, req kmsg.Request) (kmsg.Response, error) {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(brokers[id-1].Addr().String()), kgo.RequestTimeoutOverhead(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.SeedBrokers()[0].Request(ctx, req)
	}
	_, adm := threeNodeAdmin(t, brokers)
	passwords := map[string]string{"edge-device": "device-pw", "gateway": "gateway-pw", "sensor": "sensor-pw"}
	// Two nodes that are not the controller, to send changes through.
	notController := func() []int32 {
		ctrl := actingController(t, brokers).Controller().NodeID()
		var ids []int32
		for _, b := range brokers {
			if id := b.Controller().NodeID(); id != ctrl {
				ids = append(ids, id)
			}
		}
		return ids
	}
	others := notController()
	// Alter through a node that forwards it (pinned; kadm would pick).
	alter := func(node int32, req *kmsg.AlterUserSCRAMCredentialsRequest) {
		t.Helper()
		r, err := request(node, req)
		if err != nil {
			t.Fatalf("alter through node %d: %v", node, err)
		}
		for _, r := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			if r.ErrorCode != 0 {
				t.Fatalf("alter through node %d: %s: %v", node, r.User, kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
	upsert := func(user, password string) *kmsg.AlterUserSCRAMCredentialsRequest {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt = user, int8(scram.SHA512), 8192, []byte("a salt of 24 bytes for "+user)
		up.SaltedPassword, _ = scram.SHA512.SaltedPassword(password, up.Salt, 8192)
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Upsertions = append(req.Upsertions, up)
		return req
	}
	alter(others[0], upsert("edge-device", passwords["edge-device"]))
	alter(others[1], upsert("gateway", passwords["gateway"]))

	// describeAt lists the users node id describes.
	describeAt := func(id int32) string {
		t.Helper()
		r, err := request(id, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
		if err != nil {
			t.Fatalf("describe at node %d: %v", id, err)
		}
		resp := r.(*kmsg.DescribeUserSCRAMCredentialsResponse)
		var users []string
		for _, r := range resp.Results {
			if r.ErrorCode != 0 || len(r.CredentialInfos) != 1 || r.CredentialInfos[0].Iterations != 8192 {
				t.Fatalf("node %d describes %s as %+v", id, r.User, r)
			}
			users = append(users, r.User)
		}
		return strings.Join(users, ",")
	}
	everyNode := func(what, want string) {
		t.Helper()
		for _, b := range brokers {
			id := b.Controller().NodeID()
			pollFor(t, fmt.Sprintf("%s: node %d describes %q", what, id, want), 10*time.Second, func() bool { return describeAt(id) == want })
			for _, u := range strings.Split(want, ",") {
				if u == "" {
					continue
				}
				if err := checkPassword(t, b.Controller().Image(), u, passwords[u]); err != nil {
					t.Errorf("%s: node %d's credential of %s does not check the password: %v", what, id, u, err)
				}
			}
		}
	}
	everyNode("created", "edge-device,gateway")
	described, err := adm.DescribeUserSCRAMs(ctx, "edge-device")
	if err != nil || !described.Ok() {
		t.Fatalf("kadm describe: %v %+v", err, described)
	}

	for i, b := range brokers {
		if err := b.Close(); err != nil {
			t.Fatalf("close node %d: %v", i+1, err)
		}
		brokers[i] = nil
	}
	start()
	everyNode("after the restart", "edge-device,gateway")

	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "edge-device", int8(scram.SHA512)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = append(req.Deletions, del)
	alter(notController()[1], req)
	_, adm = threeNodeAdmin(t, brokers)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "sensor", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "sensor-pw"}})
	if err != nil || !altered.Ok() {
		t.Fatalf("kadm create after the restart: %v %+v", err, altered)
	}
	everyNode("one deleted, one created with kadm", "gateway,sensor")
}
