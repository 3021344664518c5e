package config

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// renamed maps names an operator may paste from older Kafka configs (or
// guess) to the setting wren reads instead. Edit distance alone would not
// find these.
var renamed = map[string]string{
	"broker.id":            "node.id",
	"log.dir":              "log.dirs",
	"log.segment.ms":       "log.roll.ms",
	"log.segment.hours":    "log.roll.hours",
	"port":                 "listeners",
	"host.name":            "listeners",
	"advertised.host.name": "advertised.listeners",
	"zookeeper.connect":    "controller.quorum.voters",
}

// unknownKey says that key, met in section ("" at the top level), is not a
// setting, and suggests the closest one.
func unknownKey(key, section string) string {
	suggest := func(e *Entry) string {
		if e.Section == section {
			return fmt.Sprintf("unknown key %s (did you mean %s?)", showKey(key), e.Key())
		}
		return fmt.Sprintf("unknown key %s (did you mean %s, in [%s]?)", showKey(key), e.Key(), e.Section)
	}
	if to, ok := renamed[key]; ok {
		return suggest(byName[to])
	}
	// Suggest only a near miss. The distance is at least the difference in
	// length, so most candidates are ruled out without computing it.
	limit := max(2, len(key)/4)
	best, bestDist := (*Entry)(nil), limit+1
	for _, e := range registry {
		for _, cand := range []string{e.Name, e.Key()} {
			if abs(len(cand)-len(key)) >= bestDist {
				continue
			}
			if d := editDistance(key, cand); d < bestDist {
				best, bestDist = e, d
			}
		}
	}
	if best == nil {
		return "unknown key " + showKey(key)
	}
	return suggest(best)
}

// unknownSection says that a table header names no section.
func unknownSection(parts []string) string {
	header := showKey(strings.Join(parts, "."))
	// [log] or [log.retention]: a Kafka name split into tables, as some
	// TOML habits would have it.
	for _, e := range registry {
		if strings.HasPrefix(e.Name, header+".") {
			return fmt.Sprintf("unknown section [%s]: keys keep their full Kafka name inside a section, as %s in [%s]",
				header, e.Name, e.Section)
		}
	}
	names := make([]string, len(sections))
	best, bestDist := "", 0
	for i, s := range sections {
		names[i] = s.Name
		if d := editDistance(parts[0], s.Name); best == "" || d < bestDist {
			best, bestDist = s.Name, d
		}
	}
	if bestDist <= max(2, len(parts[0])/4) {
		return fmt.Sprintf("unknown section [%s] (did you mean [%s]?)", header, best)
	}
	return fmt.Sprintf("unknown section [%s]: the sections are %s", header, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance in bytes. Keys are short and
// the registry small, so the quadratic cost is nothing; the input is capped
// so a hostile key cannot make it something.
func editDistance(a, b string) int {
	const limit = 128
	if len(a) > limit || len(b) > limit {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// showKey prints a key from the file for a message: as it is when it is
// plain, quoted when it holds spaces or control characters, so that every
// message stays on one line and shows what was really there.
func showKey(key string) string {
	for _, r := range key {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == utf8.RuneError {
			return quoteTOML(key)
		}
	}
	if key == "" {
		return `""`
	}
	return key
}
