package principal

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The grammar of a rule list, Kafka's RULE_PATTERN: DEFAULT; or RULE:,
// a pattern and a replacement (each a run of escaped characters or
// characters other than / and backslash), each ended by /, then L or U
// and anything up to the separator; or anything else, which the rule
// parser then refuses unless it is empty.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	// ruleSplitter finds the rules between commas, as Kafka splits them.
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	// ruleParser reads one rule from its start (Java's lookingAt).
	ruleParser = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// The groups of rulePattern inside ruleParser.
const (
	groupDefault     = 1
	groupPattern     = 2
	groupReplacement = 4
	groupCase        = 6
)

// maxRulesBytes bounds the rules text: a config value, not a program.
const maxRulesBytes = 64 << 10

// Mapper maps distinguished names to principal names by its rules.
type Mapper struct {
	rules []rule
}

// rule is one parsed rule; isDefault rules have no pattern.
type rule struct {
	isDefault bool
	// source and replacementText are the rule's text, for String.
	source, replacementText string
	// whole matches the entire DN (Java's matches()); pattern finds the
	// matches that are replaced (Java's replaceAll).
	whole, pattern *regexp.Regexp
	replacement    []segment
	lower, upper   bool
}

// segment is a piece of a replacement: literal text, or the text of a
// group when group >= 0.
type segment struct {
	literal string
	group   int
}

// Parse reads a rule list. An empty list has no rules, so Map refuses
// every DN; Kafka's default list is "DEFAULT".
func Parse(rules string) (*Mapper, error) {
	if len(rules) > maxRulesBytes {
		return nil, fmt.Errorf("the rules are %d bytes, over %d", len(rules), maxRulesBytes)
	}
	m := &Mapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		r, ok, err := parseRule(sm[1])
		if err != nil {
			return nil, err
		}
		if ok {
			m.rules = append(m.rules, r)
		}
	}
	return m, nil
}

// parseRule reads one rule; ok is false for an empty one.
func parseRule(text string) (r rule, ok bool, err error) {
	idx := ruleParser.FindStringSubmatchIndex(text)
	if idx == nil {
		return rule{}, false, fmt.Errorf("invalid rule: %s", text)
	}
	if idx[1] != len(text) {
		return rule{}, false, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", text, text[idx[1]:])
	}
	group := func(g int) (string, bool) {
		if idx[2*g] < 0 {
			return "", false
		}
		return text[idx[2*g]:idx[2*g+1]], true
	}
	if _, ok := group(groupDefault); ok {
		return rule{isDefault: true}, true, nil
	}
	pattern, ok := group(groupPattern)
	if !ok {
		return rule{}, false, nil // empty: skipped, as Kafka does
	}
	replacement, _ := group(groupReplacement)
	c, _ := group(groupCase)
	r = rule{source: pattern, replacementText: replacement, lower: c == "L", upper: c == "U"}
	if r.pattern, err = regexp.Compile(pattern); err != nil {
		return rule{}, false, fmt.Errorf("rule %s: pattern %q: %v", text, pattern, err)
	}
	r.whole = regexp.MustCompile(`^(?:` + pattern + `)\z`) // compiles: pattern did
	if r.replacement, err = parseReplacement(replacement, r.pattern); err != nil {
		return rule{}, false, fmt.Errorf("rule %s: replacement %q: %v", text, replacement, err)
	}
	return r, true, nil
}

// parseReplacement reads a replacement as Java's Matcher does, with
// Kafka's change that a $n past the last group is literal text (when the
// pattern has any group).
func parseReplacement(s string, re *regexp.Regexp) ([]segment, error) {
	groups := re.NumSubexp()
	var out []segment
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, segment{literal: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			i++
			if i == len(s) {
				return nil, errors.New("character to be escaped is missing")
			}
			lit.WriteByte(s[i])
			continue
		case '$':
		default:
			lit.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return nil, errors.New("illegal group reference: group index is missing")
		}
		if s[i] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, errors.New("named capturing group is missing trailing '}'")
			}
			name := s[i+1 : i+end]
			if name == "" {
				return nil, errors.New("named capturing group has 0 length name")
			}
			g := re.SubexpIndex(name)
			if g < 0 {
				return nil, fmt.Errorf("no group with name {%s}", name)
			}
			flush()
			out = append(out, segment{group: g})
			i += end
			continue
		}
		if s[i] < '0' || s[i] > '9' {
			return nil, errors.New("illegal group reference")
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		digits := s[i:j]
		if groups > 0 && digits[0] != '0' && !refExists(digits, groups) {
			// Kafka escapes it: the $ and the digits are text.
			lit.WriteByte('$')
			i--
			continue
		}
		// Java: the first digit, then more while the number stays a group.
		ref := int(digits[0] - '0')
		k := i + 1
		for ; k < j; k++ {
			next := ref*10 + int(s[k]-'0')
			if next > groups {
				break
			}
			ref = next
		}
		if ref > groups {
			return nil, fmt.Errorf("no group %d", ref)
		}
		flush()
		out = append(out, segment{group: ref})
		i = k - 1
	}
	flush()
	return out, nil
}

// refExists is Kafka's truncation of a reference past the last group:
// the digits lose their last one while the number is over groups and has
// two digits or more; it exists when the number left is a group.
func refExists(digits string, groups int) bool {
	for {
		if len(digits) <= len(fmt.Sprint(groups)) {
			n := 0
			for _, d := range digits {
				n = n*10 + int(d-'0')
			}
			if n <= groups {
				return true
			}
		}
		if len(digits) < 2 {
			return false
		}
		digits = digits[:len(digits)-1]
	}
}

// ErrNoMatchingRule is why Map refuses a DN that no rule matches.
var ErrNoMatchingRule = errors.New("no rule applies")

// Map returns the principal name (without the User: prefix) of a
// distinguished name: the first rule's that matches, or an error wrapping
// ErrNoMatchingRule.
func (m *Mapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %s, rules %s", ErrNoMatchingRule, dn, m)
}

func (r rule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.whole.MatchString(dn) {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, idx := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:idx[0]])
		for _, seg := range r.replacement {
			if seg.group < 0 {
				b.WriteString(seg.literal)
			} else if idx[2*seg.group] >= 0 {
				b.WriteString(dn[idx[2*seg.group]:idx[2*seg.group+1]])
			}
		}
		last = idx[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true
}

// String lists the rules as Kafka's SslPrincipalMapper.toString does,
// for errors and tests.
func (m *Mapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r rule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.source + "/" + r.replacementText
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}
