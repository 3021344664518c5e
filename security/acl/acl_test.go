package acl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic    = kmsg.ACLResourceTypeTopic
	grp      = kmsg.ACLResourceTypeGroup
	cluster  = kmsg.ACLResourceTypeCluster
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	allow    = kmsg.ACLPermissionTypeAllow
	deny     = kmsg.ACLPermissionTypeDeny
	opAll    = kmsg.ACLOperationAll
	read     = kmsg.ACLOperationRead
	write    = kmsg.ACLOperationWrite
	describe = kmsg.ACLOperationDescribe
	alter    = kmsg.ACLOperationAlter
	create   = kmsg.ACLOperationCreate
	descCfg  = kmsg.ACLOperationDescribeConfigs
	altCfg   = kmsg.ACLOperationAlterConfigs
)

func bind(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func TestValidate(t *testing.T) {
	good := bind(topic, "t", literal, "User:alice", "*", read, allow)
	for _, tc := range []struct {
		name   string
		change func(*Binding)
		want   string // "" = valid
	}{
		{"good", func(*Binding) {}, ""},
		{"prefixed", func(b *Binding) { b.PatternType = prefixed }, ""},
		{"ipv4 host", func(b *Binding) { b.Host = "10.1.2.3" }, ""},
		{"ipv6 host", func(b *Binding) { b.Host = "::1" }, ""},
		{"wildcard principal", func(b *Binding) { b.Principal = WildcardPrincipal }, ""},
		{"other principal type", func(b *Binding) { b.Principal = "Group:ops" }, ""},
		{"cluster", func(b *Binding) { b.ResourceType, b.ResourceName = cluster, ClusterName }, ""},
		{"transactional id", func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeTransactionalId }, ""},
		{"all", func(b *Binding) { b.Operation = opAll }, ""},
		{"unknown type", func(b *Binding) { b.ResourceType = 0 }, "Invalid resourceType UNKNOWN"},
		{"any type", func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny }, "Invalid resourceType ANY"},
		{"type out of range", func(b *Binding) { b.ResourceType = 9 }, "Invalid resourceType UNKNOWN"},
		{"match pattern", func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch }, "Invalid patternType MATCH"},
		{"any pattern", func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeAny }, "Invalid patternType ANY"},
		{"any operation", func(b *Binding) { b.Operation = kmsg.ACLOperationAny }, "Invalid operation ANY"},
		{"unknown operation", func(b *Binding) { b.Operation = 0 }, "Invalid operation UNKNOWN"},
		{"operation out of range", func(b *Binding) { b.Operation = 15 }, "Invalid operation UNKNOWN"},
		{"any permission", func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny }, "Invalid permissionType ANY"},
		{"empty name", func(b *Binding) { b.ResourceName = "" }, "Resource name should not be empty"},
		{"bad cluster name", func(b *Binding) { b.ResourceType, b.ResourceName = cluster, "other" }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{"principal without colon", func(b *Binding) { b.Principal = "alice" }, "Could not parse principal from `alice`"},
		{"principal without name", func(b *Binding) { b.Principal = "User:" }, "Could not parse principal from `User:`"},
		{"principal without type", func(b *Binding) { b.Principal = ":alice" }, "Could not parse principal from `:alice`"},
		{"host name", func(b *Binding) { b.Host = "localhost" }, "Invalid host `localhost`"},
		{"empty host", func(b *Binding) { b.Host = "" }, "Invalid host ``"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := good
			tc.change(&b)
			err := b.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%v: %v", b, err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("%v: got %v, want %q", b, err, tc.want)
			case tc.want != "" && !errors.Is(err, ErrInvalid):
				t.Fatalf("%v: %v is not ErrInvalid", b, err)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestFilter(t *testing.T) {
	bs := []Binding{
		bind(topic, "foo", literal, "User:a", "*", read, allow),      // 0
		bind(topic, "*", literal, "User:b", "*", write, deny),        // 1
		bind(topic, "fo", prefixed, "User:a", "1.2.3.4", read, deny), // 2
		bind(topic, "foobar", prefixed, "User:a", "*", read, allow),  // 3
		bind(grp, "foo", literal, "User:a", "*", read, allow),        // 4
		bind(cluster, ClusterName, literal, "User:a", "*", alter, allow),
	}
	any := Any
	withName := func(f Filter, pt kmsg.ACLResourcePatternType, name string) Filter {
		f.PatternType, f.ResourceName = pt, &name
		return f
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []int
	}{
		{"any", any, []int{0, 1, 2, 3, 4, 5}},
		{"topics", func() Filter { f := any; f.ResourceType = topic; return f }(), []int{0, 1, 2, 3}},
		{"literal", func() Filter { f := any; f.PatternType = literal; return f }(), []int{0, 1, 4, 5}},
		{"prefixed", func() Filter { f := any; f.PatternType = prefixed; return f }(), []int{2, 3}},
		{"any pattern named foo", withName(any, kmsg.ACLResourcePatternTypeAny, "foo"), []int{0, 4}},
		{"literal named fo", withName(any, literal, "fo"), nil},
		{"prefixed named fo", withName(any, prefixed, "fo"), []int{2}},
		// MATCH: what applies to topic foo: foo, *, prefix fo; not
		// prefix foobar.
		{"match foo topic", func() Filter {
			f := withName(any, kmsg.ACLResourcePatternTypeMatch, "foo")
			f.ResourceType = topic
			return f
		}(), []int{0, 1, 2}},
		{"match no name", func() Filter { f := any; f.PatternType = kmsg.ACLResourcePatternTypeMatch; return f }(), []int{0, 1, 2, 3, 4, 5}},
		{"principal", func() Filter { f := any; f.Principal = ptr("User:b"); return f }(), []int{1}},
		{"host", func() Filter { f := any; f.Host = ptr("1.2.3.4"); return f }(), []int{2}},
		{"operation", func() Filter { f := any; f.Operation = alter; return f }(), []int{5}},
		{"permission", func() Filter { f := any; f.Permission = deny; return f }(), []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Validate(); err != nil {
				t.Fatal(err)
			}
			var got []int
			for i, b := range bs {
				if tc.f.Matches(b) {
					got = append(got, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("matched %v, want %v", got, tc.want)
			}
		})
	}
	for _, f := range []Filter{
		{PatternType: 1, Operation: 1, Permission: 1},
		{ResourceType: 1, Operation: 1, Permission: 1},
		{ResourceType: 1, PatternType: 1, Permission: 1},
		{ResourceType: 1, PatternType: 1, Operation: 1},
		{ResourceType: 8, PatternType: 1, Operation: 1, Permission: 1},
		{ResourceType: 1, PatternType: 5, Operation: 1, Permission: 1},
		{ResourceType: 1, PatternType: 1, Operation: 15, Permission: 1},
		{ResourceType: 1, PatternType: 1, Operation: 1, Permission: 4},
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: Validate = %v, want ErrInvalid", f, err)
		}
	}
}

func TestAuthorize(t *testing.T) {
	type check struct {
		principal, host string
		op              kmsg.ACLOperation
		rt              kmsg.ACLResourceType
		name            string
		want            bool
	}
	for _, tc := range []struct {
		name         string
		bindings     []Binding
		supers       []string
		allowIfNoACL bool
		checks       []check
	}{
		{
			name: "no acls: allowIfNoACL decides",
			checks: []check{
				{"User:a", "1.1.1.1", read, topic, "t", false},
			},
		},
		{
			name:         "no acls, allow everyone",
			allowIfNoACL: true,
			checks: []check{
				{"User:a", "1.1.1.1", read, topic, "t", true},
				{"User:a", "1.1.1.1", alter, cluster, ClusterName, true},
			},
		},
		{
			name:         "an acl on the resource for someone else denies, even with allowIfNoACL",
			allowIfNoACL: true,
			bindings:     []Binding{bind(topic, "t", literal, "User:b", "*", read, allow)},
			checks: []check{
				{"User:a", "1.1.1.1", read, topic, "t", false},
				{"User:b", "1.1.1.1", read, topic, "t", true},
				{"User:a", "1.1.1.1", read, topic, "u", true},   // no acl on u
				{"User:a", "1.1.1.1", read, grp, "t", true},     // nor on group t
				{"User:b", "1.1.1.1", write, topic, "t", false}, // acl found, op not granted
			},
		},
		{
			name:   "super users",
			supers: []string{"User:admin"},
			bindings: []Binding{
				bind(topic, "*", literal, "User:*", "*", opAll, deny),
			},
			checks: []check{
				{"User:admin", "1.1.1.1", write, topic, "t", true},
				{"User:admin", "1.1.1.1", alter, cluster, ClusterName, true},
				{"User:a", "1.1.1.1", write, topic, "t", false},
				{"User:Admin", "1.1.1.1", write, topic, "t", false},
			},
		},
		{
			name: "deny wins over allow",
			bindings: []Binding{
				bind(topic, "t", literal, "User:a", "*", read, allow),
				bind(topic, "t", prefixed, "User:a", "1.1.1.1", read, deny),
			},
			checks: []check{
				{"User:a", "1.1.1.1", read, topic, "t", false},
				{"User:a", "2.2.2.2", read, topic, "t", true},
				{"User:a", "1.1.1.1", read, topic, "tt", false},
				{"User:a", "2.2.2.2", read, topic, "tt", false}, // found (prefix), no allow
			},
		},
		{
			name: "wildcards",
			bindings: []Binding{
				bind(topic, "*", literal, "User:*", "*", read, allow),
				bind(topic, "secret", literal, "User:*", "10.0.0.9", read, deny),
				bind(grp, "g", literal, "User:a", "::1", read, allow),
			},
			checks: []check{
				{"User:a", "1.1.1.1", read, topic, "anything", true},
				{"User:zed", "1.1.1.1", read, topic, "*", true},
				{"User:a", "10.0.0.9", read, topic, "secret", false},
				{"User:a", "10.0.0.8", read, topic, "secret", true},
				{"User:a", "1.1.1.1", write, topic, "anything", false},
				{"User:a", "::1", read, grp, "g", true},
				{"User:a", "1.1.1.1", read, grp, "g", false},
			},
		},
		{
			name: "literal and prefixed",
			bindings: []Binding{
				bind(topic, "foo", literal, "User:a", "*", write, allow),
				bind(topic, "bar-", prefixed, "User:a", "*", write, allow),
				bind(topic, "b", prefixed, "User:b", "*", write, allow),
				bind(topic, "*", prefixed, "User:c", "*", write, allow),
			},
			checks: []check{
				{"User:a", "h", write, topic, "foo", true},
				{"User:a", "h", write, topic, "foo2", false},
				{"User:a", "h", write, topic, "fo", false},
				{"User:a", "h", write, topic, "bar-1", true},
				{"User:a", "h", write, topic, "bar-", true},
				{"User:a", "h", write, topic, "bar", false},
				{"User:b", "h", write, topic, "bar-1", true},
				{"User:c", "h", write, topic, "x", false}, // PREFIXED "*" is a prefix, not a wildcard
				{"User:c", "h", write, topic, "*x", true},
			},
		},
		{
			name: "implied operations",
			bindings: []Binding{
				bind(topic, "r", literal, "User:a", "*", read, allow),
				bind(topic, "w", literal, "User:a", "*", write, allow),
				bind(topic, "d", literal, "User:a", "*", kmsg.ACLOperationDelete, allow),
				bind(topic, "al", literal, "User:a", "*", alter, allow),
				bind(topic, "ac", literal, "User:a", "*", altCfg, allow),
				bind(topic, "c", literal, "User:a", "*", create, allow),
				bind(topic, "all", literal, "User:a", "*", opAll, allow),
				bind(topic, "denyread", literal, "User:a", "*", read, deny),
				bind(topic, "denyread", literal, "User:a", "*", describe, allow),
				bind(topic, "denyall", literal, "User:a", "*", opAll, deny),
				bind(topic, "denyall", literal, "User:a", "*", describe, allow),
			},
			checks: []check{
				{"User:a", "h", describe, topic, "r", true},
				{"User:a", "h", describe, topic, "w", true},
				{"User:a", "h", describe, topic, "d", true},
				{"User:a", "h", describe, topic, "al", true},
				{"User:a", "h", descCfg, topic, "al", false},
				{"User:a", "h", descCfg, topic, "ac", true},
				{"User:a", "h", describe, topic, "ac", false},
				{"User:a", "h", describe, topic, "c", false},
				{"User:a", "h", read, topic, "w", false},
				{"User:a", "h", alter, topic, "all", true},
				{"User:a", "h", descCfg, topic, "all", true},
				// A DENY READ does not deny DESCRIBE: implication is for
				// ALLOWs only.
				{"User:a", "h", describe, topic, "denyread", true},
				{"User:a", "h", describe, topic, "denyall", false},
			},
		},
		{
			name: "hosts in canonical form",
			bindings: []Binding{
				bind(topic, "t", literal, "User:a", "::0001", read, allow),
				bind(topic, "t", literal, "User:a", "::ffff:10.0.0.1", read, allow),
			},
			checks: []check{
				{"User:a", "::1", read, topic, "t", true},
				{"User:a", "10.0.0.1", read, topic, "t", true},
				{"User:a", "10.0.0.2", read, topic, "t", false},
			},
		},
		{
			name:         "resource types out of range",
			allowIfNoACL: true,
			bindings:     []Binding{bind(topic, "*", literal, "User:*", "*", opAll, deny)},
			checks: []check{
				{"User:a", "h", read, -1, "t", true},
				{"User:a", "h", read, 100, "t", true},
				{"User:a", "h", read, topic, "t", false},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.bindings, tc.supers, tc.allowIfNoACL)
			for _, c := range tc.checks {
				if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("Authorize(%s, %s, %s, %s, %q) = %t, want %t", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
				if got := naive(tc.bindings, tc.supers, tc.allowIfNoACL, c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("naive(%s, %s, %s, %s, %q) = %t, want %t", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

// naive is Authorize as a scan of every binding, written from Kafka's
// StandardAuthorizerData.findResult without the index.
func naive(bindings []Binding, supers []string, allowIfNoACL bool, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	for _, s := range supers {
		if s == principal {
			return true
		}
	}
	found, allowed := false, false
	for _, b := range bindings {
		if b.Validate() != nil || b.ResourceType != rt {
			continue
		}
		applies := b.PatternType == literal && (b.ResourceName == name || b.ResourceName == WildcardName) ||
			b.PatternType == prefixed && strings.HasPrefix(name, b.ResourceName)
		if !applies {
			continue
		}
		found = true
		if b.Principal != principal && b.Principal != WildcardPrincipal {
			continue
		}
		if b.Host != WildcardHost && canonicalHost(b.Host) != host {
			continue
		}
		matches := b.Operation == op || b.Operation == opAll
		if !matches && b.Permission == allow {
			switch op {
			case describe:
				matches = b.Operation == read || b.Operation == write || b.Operation == kmsg.ACLOperationDelete || b.Operation == alter
			case descCfg:
				matches = b.Operation == altCfg
			}
		}
		if !matches {
			continue
		}
		if b.Permission == deny {
			return false
		}
		allowed = true
	}
	if !found {
		return allowIfNoACL
	}
	return allowed
}

// checkAgainstNaive builds random bindings from small alphabets (so they
// collide) and compares Authorize with naive on random questions.
func checkAgainstNaive(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"a", "ab", "abc", "abd", "b", "ba", "*", "*a", "kafka-cluster", "x"}
	principals := []string{"User:alice", "User:bob", "User:*", "Group:x"}
	hosts := []string{"*", "10.0.0.1", "10.0.0.2", "::1"}
	types := []kmsg.ACLResourceType{topic, grp, cluster, kmsg.ACLResourceTypeTransactionalId}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	for round := range 50 {
		n := r.IntN(40)
		bindings := make([]Binding, n)
		for i := range bindings {
			rt := types[r.IntN(len(types))]
			name := pick(names)
			if rt == cluster {
				name = ClusterName
			}
			pt := literal
			if r.IntN(2) == 0 {
				pt = prefixed
			}
			perm := allow
			if r.IntN(4) == 0 {
				perm = deny
			}
			bindings[i] = bind(rt, name, pt, pick(principals), pick(hosts), kmsg.ACLOperation(2+r.IntN(13)), perm)
		}
		var supers []string
		if r.IntN(4) == 0 {
			supers = []string{pick(principals)}
		}
		allowIfNoACL := r.IntN(2) == 0
		a := New(bindings, supers, allowIfNoACL)
		for range 200 {
			principal, host := pick(principals[:2]), pick(hosts[1:])
			op, rt, name := kmsg.ACLOperation(2+r.IntN(13)), types[r.IntN(len(types))], pick(names)+pick([]string{"", "c", "-1"})
			got := a.Authorize(principal, host, op, rt, name)
			want := naive(bindings, supers, allowIfNoACL, principal, host, op, rt, name)
			if got != want {
				t.Fatalf("seed %d, round %d: Authorize(%s, %s, %s, %s, %q) = %t, the scan says %t; supers %v allowIfNoACL %t; bindings:\n%s",
					seed, round, principal, host, op, rt, name, got, want, supers, allowIfNoACL, bindingLines(bindings))
			}
		}
	}
}

func bindingLines(bs []Binding) string {
	var sb strings.Builder
	for _, b := range bs {
		sb.WriteString(b.String())
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestAuthorizeMatchesScan: the index answers as a scan of every binding
// does, over bindings drawn from a seed printed on failure (replay it
// with FuzzAuthorizeMatchesScan's f.Add).
func TestAuthorizeMatchesScan(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for i := range uint64(20) {
		checkAgainstNaive(t, seed+i)
	}
}

// FuzzAuthorizeMatchesScan runs the comparison for the seeds the fuzzer
// picks; a failing seed from TestAuthorizeMatchesScan replays with
// f.Add or a corpus entry.
func FuzzAuthorizeMatchesScan(f *testing.F) {
	f.Add(uint64(1))
	f.Add(uint64(42))
	f.Fuzz(func(t *testing.T, seed uint64) { checkAgainstNaive(t, seed) })
}

func TestAuthorizeAllocatesNothing(t *testing.T) {
	a, questions := benchAuthorizer()
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		q := questions[i%len(questions)]
		a.Authorize(q.principal, q.host, q.op, q.rt, q.name)
		i++
	})
	if allocs != 0 {
		t.Fatalf("Authorize allocates %.1f times per call", allocs)
	}
}

type question struct {
	principal, host string
	op              kmsg.ACLOperation
	rt              kmsg.ACLResourceType
	name            string
}

// benchAuthorizer is a cluster with 100 users, each with a prefix of its
// own topics, a consumer group and a few literal topics, a wildcard
// reader, and a deny: 10,000 bindings.
func benchAuthorizer() (*Authorizer, []question) {
	var bs []Binding
	var qs []question
	for u := range 100 {
		p := fmt.Sprintf("User:app%d", u)
		bs = append(bs,
			bind(topic, fmt.Sprintf("app%d.", u), prefixed, p, "*", write, allow),
			bind(topic, fmt.Sprintf("app%d.", u), prefixed, p, "*", read, allow),
			bind(grp, fmt.Sprintf("app%d-", u), prefixed, p, "*", read, allow),
		)
		for i := range 97 {
			bs = append(bs, bind(topic, fmt.Sprintf("shared-%d-%d", u, i), literal, p, "*", read, allow))
		}
		qs = append(qs,
			question{p, "10.0.0.1", write, topic, fmt.Sprintf("app%d.events", u)},
			question{p, "10.0.0.1", read, topic, fmt.Sprintf("shared-%d-5", u)},
			question{p, "10.0.0.1", read, grp, fmt.Sprintf("app%d-consumers", u)},
			question{p, "10.0.0.1", write, topic, fmt.Sprintf("app%d.events", (u+1)%100)},
		)
	}
	bs = append(bs, bind(topic, "*", literal, "User:auditor", "*", describe, allow),
		bind(topic, "app0.", prefixed, "User:*", "10.9.9.9", opAll, deny))
	return New(bs, []string{"User:admin"}, false), qs
}

func BenchmarkAuthorize(b *testing.B) {
	a, qs := benchAuthorizer()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := qs[i%len(qs)]
		a.Authorize(q.principal, q.host, q.op, q.rt, q.name)
		i++
	}
}

func BenchmarkNew(b *testing.B) {
	var bs []Binding
	for u := range 10000 {
		bs = append(bs, bind(topic, fmt.Sprintf("t%d", u), literal, "User:a", "*", read, allow))
	}
	b.ReportAllocs()
	for b.Loop() {
		New(bs, nil, false)
	}
}

func TestSortAndString(t *testing.T) {
	bs := []Binding{
		bind(grp, "g", literal, "User:a", "*", read, allow),
		bind(topic, "b", literal, "User:a", "*", read, allow),
		bind(topic, "a", prefixed, "User:a", "*", read, allow),
		bind(topic, "a", literal, "User:b", "*", read, allow),
		bind(topic, "a", literal, "User:a", "*", write, deny),
	}
	Sort(bs)
	var got []string
	for _, b := range bs {
		got = append(got, fmt.Sprintf("%s/%s/%s/%s/%s", b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Operation))
	}
	want := "TOPIC/a/LITERAL/User:a/WRITE TOPIC/a/LITERAL/User:b/READ TOPIC/a/PREFIXED/User:a/READ TOPIC/b/LITERAL/User:a/READ GROUP/g/LITERAL/User:a/READ"
	if strings.Join(got, " ") != want {
		t.Fatalf("sorted:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if s := bs[0].String(); !strings.Contains(s, "resourceType=TOPIC, name=a, patternType=LITERAL") || !strings.Contains(s, "operation=WRITE, permissionType=DENY") {
		t.Fatalf("String = %s", s)
	}
}
