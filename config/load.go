package config

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2/unstable"
)

// MaxFileBytes caps the config file: it is read whole into memory, and no
// honest config comes near it.
const MaxFileBytes = 1 << 20

// maxErrors caps the problems reported for one file; past it the file is
// not worth reading on.
const maxErrors = 100

// Load reads, parses and checks a config file. A file with problems gives
// an Errors listing all of them with file:line:column.
func Load(path string) (*Config, error) {
	return LoadWith(path, Options{NodeID: NoNode})
}

// LoadWith is Load for the node o selects (node.go).
func LoadWith(path string, o Options) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	return ParseWith(path, data, o)
}

// Parse parses and checks a config file's contents; file names it in errors.
//
// The file is TOML. In the Kafka sections a key is Kafka's full name, which
// TOML reads as a dotted key ([storage] log.segment.bytes is, to TOML, the
// table storage.log.segment holding bytes). So the parse works on key paths,
// not on tables: a value's path from the root, less its first element (the
// section), joined with dots, is the setting's name. Quoted keys, dotted
// table headers ([storage.log]), top-level dotted keys (storage.log.x = 1)
// and inline tables all flatten to the same name.
func Parse(file string, data []byte) (*Config, error) {
	return ParseWith(file, data, Options{NodeID: NoNode})
}

// ParseWith is Parse for the node o selects (node.go).
func ParseWith(file string, data []byte, o Options) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrFileTooLarge, file, MaxFileBytes)
	}
	l := &loader{
		file:     file,
		data:     data[:len(data):len(data)],
		explicit: map[string]given{},
		seen:     map[string]Position{},
		failed:   map[string]bool{},
		headers:  map[string]Position{},
		node:     NoNode,
	}
	l.run()
	if len(l.errs) == 0 {
		l.selectNode(o)
	}
	c := newConfig(file, l.explicit)
	c.listenerSSL = l.listenerSSL
	c.Uplinks = l.checkUplinks(true)
	if _, chosen := l.explicit["node.id"]; !chosen {
		// A shared file checked for no node in particular: TLS material
		// given per node is checked when a node is chosen (serve, or
		// --node-id), not reported missing here.
		for _, values := range l.nodeValues {
			for name := range values {
				if slices.Contains(sslKeys, name) {
					c.perNodeSSL = true
				}
			}
		}
		if len(l.nodeListenerSSL) > 0 {
			c.perNodeSSL = true
		}
	}
	for _, e := range check(c, l.failed) {
		l.add(e)
	}
	if len(l.errs) > 0 {
		// File order, whichever pass found the problem; problems with no
		// line go last.
		slices.SortStableFunc(l.errs, func(a, b *Error) int {
			return cmpPos(a.Pos, b.Pos)
		})
		return nil, l.errs
	}
	return c, nil
}

type loader struct {
	file string
	// data's capacity ends at its length, so that a parser error's
	// highlight (a sub-slice of data) yields its offset.
	data  []byte
	lines []int // offsets of line starts, built on first use

	explicit map[string]given    // accepted values
	seen     map[string]Position // every setting met, accepted or not: duplicates
	failed   map[string]bool     // settings whose value was refused: cross-checks skip them
	headers  map[string]Position // table headers seen, by path
	errs     Errors

	// The table the next key-values belong to: section nil at the top
	// level; skip after a bad header, whose keys are not worth reporting.
	section *Section
	prefix  []string
	skip    bool
	// node is the node of the current [node.N.SECTION] table, NoNode
	// outside one; nodeValues are those tables' values by node, and
	// nodeTables where each node's first table is.
	node       int32
	nodeValues map[int32]map[string]given
	nodeTables map[int32]Position
	// listenerSSL holds listener.name.NAME.ssl.* (Config.listenerSSL);
	// nodeListenerSSL those of [node.N.security] tables, by node, which
	// selectNode lays over listenerSSL for the node chosen.
	listenerSSL     map[string]map[string]given
	nodeListenerSSL map[int32]map[string]map[string]given
	// runtime: the links are run-time links (uplink.NAME.KEY dynamic
	// configs, uplink_dynamic.go), not the file's tables.
	runtime bool
	// uplink is NAME of the current [uplink.NAME] table, "" outside one;
	// uplinks are the links met, in file order (uplink.go).
	uplink  string
	uplinks []*uplinkDraft
}

// listenerOverride handles listener.name.NAME.ssl.x = value: listener
// NAME's own value of ssl.x.
func (l *loader) listenerOverride(section *Section, key string, value *unstable.Node, pos Position) {
	rest := strings.TrimPrefix(key, "listener.name.")
	name, sub, ok := strings.Cut(rest, ".")
	switch {
	case !ok || !validListenerName(name):
		l.errorf(pos, key, "key %s: a listener's own setting is listener.name.NAME.ssl.*, NAME in lower case", key)
		return
	case !slices.Contains(sslKeys, sub):
		l.errorf(pos, key, "key %s: %s cannot be set per listener (these can: %s)", key, sub, strings.Join(sslKeys, ", "))
		return
	case section.Name != "security":
		l.errorf(pos, key, "key %s belongs in section [security]", key)
		return
	}
	name = strings.ToLower(name)
	e := byName[sub]
	seenKey := key
	if l.node != NoNode {
		seenKey = fmt.Sprintf("node.%d.%s", l.node, key)
	}
	if first, dup := l.seen[seenKey]; dup {
		l.errorf(pos, key, "duplicate key %s (first set at %d:%d)", key, first.Line, first.Column)
		return
	}
	l.seen[seenKey] = pos
	v, vpos, err := l.convert(e, value, pos)
	if err == nil {
		if err = e.Validator.Check(v); err != nil {
			err = refusedValue(e, v, err)
		}
	}
	if err != nil {
		l.errorf(vpos, key, "%s: %v", key, err)
		return
	}
	g := given{value: v, source: SourceStaticBroker, pos: pos}
	if l.node != NoNode {
		// Node N's own value, as a node's ssl.* in [node.N.security]: a
		// node-specific keystore of one listener.
		if l.nodeListenerSSL == nil {
			l.nodeListenerSSL = map[int32]map[string]map[string]given{}
		}
		setListenerSSL(&l.nodeListenerSSL, l.node, name, sub, g)
		return
	}
	if l.listenerSSL == nil {
		l.listenerSSL = map[string]map[string]given{}
	}
	if l.listenerSSL[name] == nil {
		l.listenerSSL[name] = map[string]given{}
	}
	l.listenerSSL[name][sub] = g
}

// setListenerSSL sets listener name's sub of node in m.
func setListenerSSL(m *map[int32]map[string]map[string]given, node int32, name, sub string, g given) {
	if (*m)[node] == nil {
		(*m)[node] = map[string]map[string]given{}
	}
	if (*m)[node][name] == nil {
		(*m)[node][name] = map[string]given{}
	}
	(*m)[node][name][sub] = g
}

func (l *loader) add(e *Error) {
	if len(l.errs) < maxErrors {
		l.errs = append(l.errs, e)
	} else if len(l.errs) == maxErrors {
		l.errs = append(l.errs, &Error{File: l.file, Pos: e.Pos, Msg: fmt.Sprintf("too many errors (over %d); stopping", maxErrors)})
	}
}

func (l *loader) errorf(pos Position, key, format string, args ...any) {
	l.add(&Error{File: l.file, Pos: pos, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) run() {
	var p unstable.Parser
	p.Reset(l.data)
	for len(l.errs) <= maxErrors && p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			l.table(n)
		case unstable.ArrayTable:
			l.errorf(l.nodePos(n.Child()), "", "arrays of tables ([[%s]]) have no place in the config file", showKey(strings.Join(keyParts(n), ".")))
			l.section, l.skip = nil, true
		case unstable.KeyValue:
			l.keyValue(n, nil)
		}
	}
	if err := p.Error(); err != nil {
		pos := l.offsetPos(len(l.data)) // the parser's errors all say where; this never shows
		msg := err.Error()
		if perr, ok := err.(*unstable.ParserError); ok {
			pos = l.offsetPos(l.highlightOffset(perr.Highlight))
			msg = perr.Message
		}
		l.errorf(pos, "", "syntax error: %s", msg)
	}
}

// table handles a [section] or [section.sub.path] header.
func (l *loader) table(n *unstable.Node) {
	parts := keyParts(n)
	pos := l.nodePos(n.Child())
	path := strings.Join(parts, "\x00")
	if first, dup := l.headers[path]; dup {
		l.errorf(pos, "", "table [%s] defined twice (first at %d:%d)", showKey(strings.Join(parts, ".")), first.Line, first.Column)
	} else {
		l.headers[path] = pos
	}
	l.node, l.uplink = NoNode, ""
	if parts[0] == "uplink" {
		l.uplinkTable(parts, pos)
		return
	}
	if parts[0] == "node" {
		l.nodeTable(parts, pos)
		return
	}
	s := sectionByName(parts[0])
	if s == nil {
		l.errorf(pos, "", "%s", unknownSection(parts))
		l.section, l.prefix, l.skip = nil, nil, true
		return
	}
	l.section, l.prefix, l.skip = s, parts[1:], false
}

// keyValue handles key = value; base is the path of an enclosing inline
// table, relative to the current table.
func (l *loader) keyValue(n *unstable.Node, base []string) {
	if l.skip {
		return
	}
	keys := n.Key()
	keys.Next()
	pos := l.nodePos(keys.Node())
	path := append(slices.Clone(base), keyParts(n)...)
	if len(path)+len(l.prefix) > maxKeyParts {
		// Nested inline tables would otherwise cost memory quadratic in
		// their depth; no setting's name has more than a handful of parts.
		l.errorf(pos, "", "key %s... is nested more than %d levels deep", showKey(strings.Join(path[:3], ".")), maxKeyParts)
		return
	}
	value := n.Value()
	if value.Kind == unstable.InlineTable {
		it := value.Children()
		for it.Next() {
			if kv := it.Node(); kv.Kind == unstable.KeyValue {
				l.keyValue(kv, path)
			}
		}
		return
	}

	section := l.section
	local := append(slices.Clone(l.prefix), path...)
	if l.uplink != "" {
		l.uplinkValue(l.uplink, strings.Join(local, "."), value, pos)
		return
	}
	if section == nil && local[0] == "uplink" {
		// Top level: uplink.NAME.key = value.
		if len(local) < 3 {
			l.errorf(pos, strings.Join(local, "."), "key %s: a link's settings are uplink.NAME.key, or go in [uplink.NAME]", strings.Join(local, "."))
			return
		}
		l.uplinkValue(local[1], strings.Join(local[2:], "."), value, pos)
		return
	}
	if section == nil {
		// Top level: section.key = value is TOML for the same thing as
		// [section] key = value.
		if s := sectionByName(local[0]); s != nil && len(local) > 1 {
			section, local = s, local[1:]
		} else {
			name := strings.Join(local, ".")
			if e, ok := byName[name]; ok {
				l.errorf(pos, name, "key %s is outside any section: it belongs in [%s]", name, e.Section)
			} else {
				l.errorf(pos, name, "%s", unknownKey(name, ""))
			}
			return
		}
	}
	key := strings.Join(local, ".")
	if strings.HasPrefix(key, "listener.name.") {
		l.listenerOverride(section, key, value, pos)
		return
	}
	e, msg := resolve(section, key)
	if e == nil {
		l.errorf(pos, key, "%s", msg)
		return
	}
	seenKey := e.Name
	if l.node != NoNode {
		if e.Name == "node.id" || e.Name == "controller.quorum.voters" {
			l.errorf(pos, e.Name, "%s cannot differ between nodes: set it outside [node.%d.*]", e.Name, l.node)
			return
		}
		seenKey = fmt.Sprintf("node.%d.%s", l.node, e.Name)
	}
	if first, dup := l.seen[seenKey]; dup {
		l.errorf(pos, e.Name, "duplicate key %s (first set at %d:%d)", e.Key(), first.Line, first.Column)
		return
	}
	l.seen[seenKey] = pos
	v, vpos, err := l.convert(e, value, pos)
	if err == nil {
		if err = e.Validator.Check(v); err != nil {
			err = refusedValue(e, v, err)
		}
	}
	if err != nil {
		// The setting keeps its default, and cross-checks leave it alone
		// rather than report a second, confusing problem.
		l.failed[e.Name] = true
		l.errorf(vpos, e.Name, "%s: %v", e.Name, err)
		return
	}
	if l.node != NoNode {
		l.nodeValues[l.node][e.Name] = given{value: v, source: SourceStaticBroker, pos: pos}
		return
	}
	l.explicit[e.Name] = given{value: v, source: SourceStaticBroker, pos: pos}
}

// nodeTable handles a [node.N.SECTION] header: settings of node N only.
func (l *loader) nodeTable(parts []string, pos Position) {
	id, err := strconv.ParseInt(parts[min(1, len(parts)-1)], 10, 32)
	if len(parts) < 3 || err != nil || id < 0 {
		l.errorf(pos, "", "table [%s]: a node's own settings go in [node.N.SECTION], as [node.2.broker]", showKey(strings.Join(parts, ".")))
		l.section, l.prefix, l.skip = nil, nil, true
		return
	}
	s := sectionByName(parts[2])
	if s == nil {
		l.errorf(pos, "", "%s", unknownSection(parts[2:]))
		l.section, l.prefix, l.skip = nil, nil, true
		return
	}
	if l.nodeValues == nil {
		l.nodeValues, l.nodeTables = map[int32]map[string]given{}, map[int32]Position{}
	}
	if l.nodeValues[int32(id)] == nil {
		l.nodeValues[int32(id)] = map[string]given{}
		l.nodeTables[int32(id)] = pos
	}
	l.node, l.section, l.prefix, l.skip = int32(id), s, parts[3:], false
}

// resolve finds the setting key names inside section, or says why not.
func resolve(s *Section, key string) (*Entry, string) {
	name := key
	if s.Prefixed {
		name = s.Name + "." + key
	}
	if e, ok := byName[name]; ok && e.Section == s.Name {
		return e, ""
	}
	// The right name in the wrong section.
	if e, ok := byName[key]; ok {
		if e.Key() != key {
			return nil, fmt.Sprintf("key %s belongs in section [%s], as %s", key, e.Section, e.Key())
		}
		return nil, fmt.Sprintf("key %s belongs in section [%s]", key, e.Section)
	}
	for _, p := range sections {
		if e, ok := byName[p.Name+"."+key]; ok && p.Prefixed && p.Name != s.Name {
			return nil, fmt.Sprintf("key %s belongs in section [%s]", key, e.Section)
		}
	}
	return nil, unknownKey(key, s.Name)
}

// convert turns a TOML value into the entry's type. pos is the key's
// position, used for values that carry none of their own (arrays).
func (l *loader) convert(e *Entry, n *unstable.Node, pos Position) (any, Position, error) {
	vpos := pos
	if n.Kind != unstable.Array {
		vpos = l.nodePos(n)
	}
	switch e.Type {
	case TypeBoolean:
		if n.Kind == unstable.Bool {
			return string(n.Data) == "true", vpos, nil
		}
		return nil, vpos, fmt.Errorf("expected true or false, got %s", l.describe(n))
	case TypeInt, TypeShort, TypeLong:
		if n.Kind != unstable.Integer {
			return nil, vpos, fmt.Errorf("expected an integer, got %s", l.describe(n))
		}
		x, err := strconv.ParseInt(strings.ReplaceAll(string(n.Data), "_", ""), 0, 64)
		lo, hi := widthRange(e.Type)
		if err != nil || x < lo || x > hi {
			return nil, vpos, fmt.Errorf("%s is out of range for %s (%d to %d)", n.Data, e.Type.word(), lo, hi)
		}
		return x, vpos, nil
	case TypeDouble:
		switch n.Kind {
		case unstable.Integer:
			if x, err := strconv.ParseInt(strings.ReplaceAll(string(n.Data), "_", ""), 0, 64); err == nil {
				return float64(x), vpos, nil
			}
			return nil, vpos, fmt.Errorf("%s is out of range for a double", n.Data)
		case unstable.Float:
			if f, ok := parseTOMLFloat(string(n.Data)); ok {
				return f, vpos, nil
			}
			return nil, vpos, fmt.Errorf("%s is out of range for a double", n.Data)
		}
		return nil, vpos, fmt.Errorf("expected a number, got %s", l.describe(n))
	case TypeString:
		if n.Kind == unstable.String {
			return string(n.Data), vpos, nil
		}
		return nil, vpos, fmt.Errorf("expected a string, got %s", l.describe(n))
	case TypeList:
		switch n.Kind {
		case unstable.String:
			// A comma-separated string, as server.properties writes lists.
			return splitList(string(n.Data)), vpos, nil
		case unstable.Array:
			out := []string{}
			it := n.Children()
			for it.Next() {
				c := it.Node()
				if c.Kind != unstable.String {
					return nil, l.nodePosOr(c, pos), fmt.Errorf("expected a list of strings, got %s in it", l.describe(c))
				}
				if len(out) >= maxListLen {
					return nil, vpos, fmt.Errorf("more than %d elements", maxListLen)
				}
				out = append(out, string(c.Data))
			}
			return out, vpos, nil
		}
		return nil, vpos, fmt.Errorf("expected a list of strings like [\"a\", \"b\"], got %s", l.describe(n))
	}
	panic(fmt.Sprintf("config: entry %s has unknown type %d", e.Name, e.Type))
}

// maxKeyParts caps the parts of a key path, tables and inline tables
// included.
const maxKeyParts = 16

// maxListLen caps a list setting; the longest honest one (voters, log.dirs)
// has a handful of elements.
const maxListLen = 1000

func parseTOMLFloat(s string) (float64, bool) {
	s = strings.ReplaceAll(s, "_", "")
	if strings.TrimLeft(s, "+-") == "nan" {
		return math.NaN(), true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// describe names a TOML value for an error message.
func (l *loader) describe(n *unstable.Node) string {
	switch n.Kind {
	case unstable.String:
		return "string " + quoteTOML(truncate(string(n.Data), 40))
	case unstable.Integer:
		return "integer " + truncate(string(n.Data), 40)
	case unstable.Float:
		return "float " + truncate(string(n.Data), 40)
	case unstable.Bool:
		return "boolean " + string(n.Data)
	case unstable.Array:
		return "an array"
	case unstable.InlineTable:
		return "an inline table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "date-time " + truncate(string(n.Data), 40)
	}
	return n.Kind.String()
}

// truncate shortens s to about n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func keyParts(n *unstable.Node) []string {
	var parts []string
	it := n.Key()
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func (l *loader) nodePos(n *unstable.Node) Position {
	return l.offsetPos(int(n.Raw.Offset))
}

// nodePosOr is n's position, or def for nodes that carry none (arrays).
func (l *loader) nodePosOr(n *unstable.Node, def Position) Position {
	if n.Kind == unstable.Array {
		return def
	}
	return l.nodePos(n)
}

// highlightOffset finds where a parser error's highlight starts in data.
// The highlight is a sub-slice of data, so its capacity says where it
// starts; anything else (never seen) points at the end of the file.
func (l *loader) highlightOffset(h []byte) int {
	off := len(l.data) - cap(h)
	if off < 0 || off > len(l.data) || (len(h) > 0 && off < len(l.data) && &l.data[off] != &h[0]) {
		return len(l.data)
	}
	return off
}

func cmpPos(a, b Position) int {
	switch {
	case a.Line == b.Line:
		return a.Column - b.Column
	case a.Line == 0:
		return 1
	case b.Line == 0:
		return -1
	}
	return a.Line - b.Line
}

func (l *loader) offsetPos(off int) Position {
	if l.lines == nil {
		l.lines = []int{0}
		for i, c := range l.data {
			if c == '\n' {
				l.lines = append(l.lines, i+1)
			}
		}
	}
	off = min(max(off, 0), len(l.data))
	line, _ := slices.BinarySearch(l.lines, off+1)
	return Position{Line: line, Column: off - l.lines[line-1] + 1}
}

// refusedValue is a value's refusal; a sensitive setting's value is not
// repeated, so the error does not carry a secret into logs.
func refusedValue(e *Entry, v any, err error) error {
	if e.Sensitive {
		return fmt.Errorf("invalid value: %v", err)
	}
	return fmt.Errorf("invalid value %s: %v", truncate(tomlValue(v), 120), err)
}
