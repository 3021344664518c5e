package principal

import "testing"

// FuzzParse feeds the rule parser any text: it returns a mapper or an
// error, never panics, and a mapper maps any DN without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		`RULE:\/\\\(\)\n\t/\/\//`,
		`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/`,
		"RULE:^CN=(?P<cn>[^,]*).*$/${cn}$12$/",
		",,, ,",
	} {
		f.Add(s, "CN=Duke,OU=ServiceUsers,O=Org,C=US")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := Parse(rules)
		if err != nil {
			return
		}
		_ = m.String()
		if name, err := m.Map(dn); err == nil && len(m.rules) == 0 {
			t.Fatalf("no rules mapped %q to %q", dn, name)
		}
	})
}
