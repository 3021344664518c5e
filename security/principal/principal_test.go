package principal

import (
	"errors"
	"strings"
	"testing"
)

// The cases of Kafka's SslPrincipalMapperTest.

func TestValidRules(t *testing.T) {
	for _, rules := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := Parse(rules); err != nil {
			t.Errorf("Parse(%q): %v", rules, err)
		}
	}
}

func TestInvalidRules(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		// Refused here, where Kafka fails later, at the first client.
		"RULE:^CN=(?<=x).*$/$1/", // look-behind: not in Go's regexp
		"RULE:^CN=.*$/$1/",       // $1 with no group
		`RULE:^CN=(.*)$/$1\/`,    // the escape eats the closing /
	} {
		if m, err := Parse(rules); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", rules, m)
		}
	}
}

func TestMapper(t *testing.T) {
	m, err := Parse(strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		got, err := m.Map(dn)
		if err != nil || got != want {
			t.Errorf("Map(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestRulesSplitting(t *testing.T) {
	for _, c := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		// Empty rules are ignored.
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		// Escape sequences.
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		// Rules rule.
		{`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`},
	} {
		m, err := Parse(c.rules)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.rules, err)
			continue
		}
		if got := m.String(); got != c.want {
			t.Errorf("Parse(%q) = %s, want %s", c.rules, got, c.want)
		}
	}
}

func TestCommaWithWhitespace(t *testing.T) {
	m, err := Parse(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Map(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Errorf("Map = %q, %v", got, err)
	}
}

// wren's own cases: the replacement as Java reads it, and no match.
func TestReplacement(t *testing.T) {
	for _, c := range []struct{ rules, dn, want string }{
		{"RULE:^CN=(.*?),O=(.*)$/$1_$2/", "CN=a,O=b", "a_b"},     // Go's Expand would read $1_ as a group name
		{"RULE:^CN=(.*?),O=(.*)$/$1$3/", "CN=a,O=b", "a$3"},      // past the last group: literal (Kafka)
		{"RULE:^CN=(.*?),O=(.*)$/$12/", "CN=a,O=b", "a2"},        // the longest group number that exists
		{"RULE:^CN=(?P<cn>[^,]*).*$/${cn}!/", "CN=x,O=y", "x!"},  // named group
		{`RULE:^CN=([^,]*).*$/\$1=$1/`, "CN=x,O=y", "$1=x"},      // escaped $
		{"RULE:^CN=([^,]*)(,OU=([^,]*))?$/$1:$3/", "CN=x", "x:"}, // a group that took no part is empty
	} {
		m, err := Parse(c.rules)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.rules, err)
			continue
		}
		if got, err := m.Map(c.dn); err != nil || got != c.want {
			t.Errorf("%s: Map(%q) = %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}
	m, err := Parse("RULE:^CN=(.*)$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Map("O=x"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("a DN no rule matches: %v, want ErrNoMatchingRule", err)
	}
}
