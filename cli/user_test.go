package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUser: `wren user create` from --password and from standard input,
// with each mechanism; `list` of every user and of some, as text and
// JSON; `delete` of one mechanism and of every one; the refusals.
func TestUser(t *testing.T) {
	b := wrenBroker(t, "")
	r := mustRun(t, "", "user", "create", "alice", "--password", "pw-a", "-b", b)
	if r.stdout != "Set the SCRAM-SHA-512 credential of user alice (8192 iterations).\n" {
		t.Errorf("create alice: %q", r.stdout)
	}
	mustRun(t, "pw-a2\n", "user", "create", "alice", "--mechanism", "SCRAM-SHA-256", "--iterations", "4096", "-b", b)
	mustRun(t, "pw-b", "user", "create", "bob", "-b", b)

	r = mustRun(t, "", "user", "list", "-b", b)
	want := "alice\tSCRAM-SHA-256 (4096 iterations), SCRAM-SHA-512 (8192 iterations)\nbob\tSCRAM-SHA-512 (8192 iterations)\n"
	if r.stdout != want {
		t.Errorf("list:\n%s\nwant\n%s", r.stdout, want)
	}
	r = mustRun(t, "", "user", "list", "bob", "--format", "json", "-b", b)
	var list []userCredential
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].User != "bob" ||
		len(list[0].Credentials) != 1 || list[0].Credentials[0] != (credentialInfo{"SCRAM-SHA-512", 8192}) {
		t.Errorf("list bob as JSON: %v %s", err, r.stdout)
	}

	r = mustRun(t, "", "user", "delete", "alice", "--mechanism", "SCRAM-SHA-512", "-b", b)
	if r.stdout != "Deleted the SCRAM-SHA-512 credential of user alice.\n" {
		t.Errorf("delete alice's SCRAM-SHA-512: %q", r.stdout)
	}
	mustRun(t, "pw-a", "user", "create", "alice", "-b", b)
	r = mustRun(t, "", "user", "delete", "alice", "bob", "-b", b)
	if got := strings.Count(r.stdout, "Deleted the "); got != 3 {
		t.Errorf("delete alice and bob: %d credentials deleted, want 3:\n%s", got, r.stdout)
	}
	r = mustRun(t, "", "user", "list", "-b", b)
	if r.stdout != "" {
		t.Errorf("list after the deletes: %q", r.stdout)
	}

	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		err   string
	}{
		{"", []string{"user", "list", "ghost"}, 1, "user ghost has no SCRAM credential"},
		{"", []string{"user", "delete", "ghost"}, 1, "RESOURCE_NOT_FOUND"},
		{"", []string{"user", "delete", "ghost", "-m", "SCRAM-SHA-256"}, 1, "RESOURCE_NOT_FOUND"},
		{"", []string{"user", "create", "carol"}, 2, "no password"},
		{"pw", []string{"user", "create", "carol", "--iterations", "100"}, 2, "--iterations 100"},
		{"pw", []string{"user", "create", "carol", "--mechanism", "PLAIN"}, 2, "--mechanism \"PLAIN\""},
		{"pw", []string{"user", "create"}, 2, "one USER"},
	} {
		r := run(t, c.stdin, append(c.args, "-b", b)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.err) {
			t.Errorf("wren %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.err)
		}
	}
}
