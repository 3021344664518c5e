package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestACL: `wren acl add` of allowed and denied principals on topics,
// groups and the cluster, literal and prefixed; `list` of every ACL, of
// one principal and of what applies to a topic (MATCH), as text and
// JSON; `remove` of a selection; the refusals. The CLI's principal, an
// anonymous client of the PLAINTEXT listener, is a super user: once an
// ACL names the cluster (User:ops ALTER below), allow.everyone.if.no.acl.found
// no longer covers the cluster resource, and without it the CLI could not
// even list the ACLs, as with Kafka's authorizer.
func TestACL(t *testing.T) {
	b := wrenBroker(t, "\n[security]\nsuper.users = [\"User:ANONYMOUS\"]\n")
	r := mustRun(t, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--operation", "Write",
		"--topic", "orders", "-b", b)
	want := "ALLOW\tUser:alice from *\tREAD\tTOPIC orders (LITERAL)\nALLOW\tUser:alice from *\tWRITE\tTOPIC orders (LITERAL)\n"
	if r.stdout != want {
		t.Errorf("add alice:\n%s\nwant\n%s", r.stdout, want)
	}
	mustRun(t, "", "acl", "add", "--allow-principal", "User:bob", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.9",
		"--operation", "Read", "--group", "app-", "--topic", "app-", "--resource-pattern-type", "prefixed", "-b", b)
	mustRun(t, "", "acl", "add", "--allow-principal", "User:ops", "--operation", "Alter", "--cluster", "-b", b)

	r = mustRun(t, "", "acl", "list", "-b", b)
	if got := strings.Count(r.stdout, "\n"); got != 7 {
		t.Errorf("list: %d ACLs, want 7:\n%s", got, r.stdout)
	}
	r = mustRun(t, "", "acl", "list", "--principal", "User:mallory", "--format", "json", "-b", b)
	var list []aclEntry
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[0].Principal != "User:mallory" ||
		list[0].Permission != "DENY" || list[0].Host != "10.0.0.9" || list[0].PatternType != "PREFIXED" {
		t.Errorf("list mallory as JSON: %v %s", err, r.stdout)
	}
	// What applies to topic app-1: the prefixed ACLs of app-, not orders.
	r = mustRun(t, "", "acl", "list", "--topic", "app-1", "--resource-pattern-type", "match", "-b", b)
	want = "ALLOW\tUser:bob from *\tREAD\tTOPIC app- (PREFIXED)\nDENY\tUser:mallory from 10.0.0.9\tREAD\tTOPIC app- (PREFIXED)\n"
	if r.stdout != want {
		t.Errorf("list what applies to app-1:\n%s\nwant\n%s", r.stdout, want)
	}

	r = mustRun(t, "", "acl", "remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders", "-b", b)
	if r.stdout != "ALLOW\tUser:alice from *\tWRITE\tTOPIC orders (LITERAL)\n" {
		t.Errorf("remove alice's WRITE: %q", r.stdout)
	}
	r = mustRun(t, "", "acl", "remove", "--topic", "app-", "--group", "app-", "--resource-pattern-type", "prefixed", "-b", b)
	if got := strings.Count(r.stdout, "\n"); got != 4 {
		t.Errorf("remove the app- prefixes: %d ACLs, want 4:\n%s", got, r.stdout)
	}
	r = mustRun(t, "", "acl", "list", "-b", b)
	want = "ALLOW\tUser:alice from *\tREAD\tTOPIC orders (LITERAL)\nALLOW\tUser:ops from *\tALTER\tCLUSTER kafka-cluster (LITERAL)\n"
	if r.stdout != want {
		t.Errorf("list after the removes:\n%s\nwant\n%s", r.stdout, want)
	}

	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"acl", "add", "--allow-principal", "User:a", "--topic", "t"}, 2, "no --operation"},
		{[]string{"acl", "add", "--operation", "read", "--topic", "t"}, 2, "no --allow-principal"},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--operation", "read"}, 2, "no resource"},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--operation", "fly", "--topic", "t"}, 2, `--operation "fly"`},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--operation", "read", "--topic", "t", "--resource-pattern-type", "match"}, 2, "literal or prefixed"},
		{[]string{"acl", "add", "--allow-principal", "alice", "--operation", "read", "--topic", "t"}, 1, "INVALID_REQUEST"},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--allow-host", "localhost", "--operation", "read", "--topic", "t"}, 1, "Invalid host"},
		{[]string{"acl", "remove", "--principal", "User:a"}, 2, "no resource"},
	} {
		r := run(t, "", append(c.args, "-b", b)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.err) {
			t.Errorf("wren %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.err)
		}
	}
}
