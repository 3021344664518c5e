package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genValue draws a value the entry's validator accepts. Settings with a
// custom validator draw from a pool of known-good values.
func genValue(t *rapid.T, e *Entry) any {
	label := e.Name
	v := e.Validator
	switch {
	case e.Type == TypeBoolean:
		return rapid.Bool().Draw(t, label)
	case isInteger(e.Type):
		lo, hi := widthRange(e.Type)
		if v != nil && v.kind == vRange {
			lo, hi = max(lo, v.lo), min(hi, v.hi)
		}
		// Mostly small numbers, sometimes the edges.
		return rapid.OneOf(
			rapid.Int64Range(max(lo, -1), min(hi, 1<<20)),
			rapid.SampledFrom([]int64{lo, hi}),
			rapid.Int64Range(lo, hi),
		).Draw(t, label)
	case e.Type == TypeDouble:
		return rapid.Float64Range(v.loF, v.hiF).Draw(t, label)
	case v != nil && v.kind == vOneOf:
		return rapid.SampledFrom(v.oneOf).Draw(t, label)
	case v != nil && v.kind == vList:
		p := rapid.Permutation(v.oneOf).Draw(t, label)
		return p[:rapid.IntRange(1, len(p)).Draw(t, label+" len")]
	}
	switch e.Name {
	case "log.dirs":
		return rapid.SliceOfNDistinct(rapid.StringMatching(`/[a-zA-Z0-9 _."\\é\t-]{1,12}`), 1, 3, func(s string) string { return s }).Draw(t, label)
	case "listeners":
		return rapid.SampledFrom([][]string{
			{"PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
			{"plaintext://:9092", "CONTROLLER://[::1]:0"},
			{"PLAINTEXT://edge-1.local:19092", "INTERNAL://10.0.0.1:19094", "CONTROLLER://10.0.0.1:19093"},
		}).Draw(t, label)
	case "advertised.listeners":
		return rapid.SampledFrom([][]string{{}, {"PLAINTEXT://edge-1.local:9092"}}).Draw(t, label)
	case "controller.listener.names":
		return []string{"CONTROLLER"}
	case "controller.quorum.voters":
		return rapid.SampledFrom([][]string{
			{"1@127.0.0.1:9093"},
			{"1@a:9093", "2@b:9093"},
			{"3@c:9093", "2@[::1]:9093", "1@a.example:1"},
		}).Draw(t, label)
	case "cluster.id":
		return rapid.SampledFrom([]string{"", "MkU3OEVBNTcwNTJENDM2Qg"}).Draw(t, label)
	case "max.connections.per.ip.overrides":
		return rapid.SampledFrom([]string{"", "10.0.0.5:500", "127.0.0.1:0, [fd00::1]:7"}).Draw(t, label)
	case "http.listen":
		return rapid.SampledFrom([]string{"", "127.0.0.1:9644", "[::1]:0"}).Draw(t, label)
	case "listener.security.protocol.map":
		return rapid.SampledFrom([]string{defaultProtocolMap, "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"}).Draw(t, label)
	case "ssl.keystore.location", "ssl.truststore.location":
		return rapid.SampledFrom([]string{"", "/etc/wren/tls.pem"}).Draw(t, label)
	case "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password", "ssl.truststore.certificates":
		return rapid.SampledFrom([]string{"", "-----BEGIN X-----\nAA==\n-----END X-----\n"}).Draw(t, label)
	case "bootstrap.admin.user", "bootstrap.admin.scram":
		return ""
	case "ssl.principal.mapping.rules":
		return rapid.SampledFrom([]string{"DEFAULT", `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT`, `RULE:^CN=([^,\\]*)(,.*|$)/$1/`}).Draw(t, label)
	case "super.users":
		return rapid.SampledFrom([][]string{{}, {"User:admin"}, {"User:CN=admin,OU=ops", "User:b"}}).Draw(t, label)
	case "ssl.cipher.suites":
		return rapid.SampledFrom([][]string{{}, {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}}).Draw(t, label)
	}
	panic("genValue: no generator for " + e.Name)
}

// genFile draws a config file setting some settings, spelling keys in the
// ways TOML allows.
func genFile(t *rapid.T) string {
	picked := rapid.SliceOfNDistinct(rapid.SampledFrom(registry), 0, 10, func(e *Entry) string { return e.Name }).Draw(t, "settings")
	var b strings.Builder
	for _, s := range sections {
		first := true
		for _, e := range picked {
			if e.Section != s.Name {
				continue
			}
			if first {
				fmt.Fprintf(&b, "[%s]\n", s.Name)
				first = false
			}
			key := e.Key()
			if strings.HasPrefix(e.TOMLKey(), `"`) || rapid.Bool().Draw(t, "quote "+e.Name) {
				key = `"` + key + `"`
			}
			fmt.Fprintf(&b, "%s = %s\n", key, tomlValue(genValue(t, e)))
		}
	}
	return b.String()
}

// Dump(all) and Dump(false) of any loaded config load back to an equal one.
func TestDumpRoundTripProperty(t *testing.T) {
	skipped, checked := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		in := genFile(t)
		c, err := Parse("gen.toml", []byte(in))
		if err != nil {
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("%v", err)
			}
			for _, e := range es {
				if e.Pos.Line == 0 {
					t.Fatalf("error without a position: %v\n%s", e, in)
				}
			}
			// Values valid one by one may contradict each other.
			skipped++
			t.Skip("contradicting settings")
		}
		checked++
		checkRoundTrip(t, c)
		if _, err := c.DescribeBroker(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DescribeTopic(nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d configs round-tripped, %d skipped as contradictory", checked, skipped)
}

// FuzzLoad: arbitrary bytes never panic; problems carry the file's
// position; whatever loads round-trips through Dump.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "*", "*.toml"))
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(ExampleFile()))
	f.Add([]byte(Default().Dump(true)))
	f.Add([]byte("storage = { log = { segment.bytes = 2097152 } }\n[storage.log]\nretention.ms = 0x10\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data)
		if err != nil {
			if errors.Is(err, ErrFileTooLarge) {
				if len(data) <= MaxFileBytes {
					t.Fatalf("ErrFileTooLarge for %d bytes", len(data))
				}
				return
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 || len(es) > maxErrors+1 {
				t.Fatalf("error is not a bounded Errors: %T %v", err, err)
			}
			lines := strings.Count(string(data), "\n") + 1
			for _, e := range es {
				if e.Pos.Line < 1 || e.Pos.Line > lines || e.Pos.Column < 1 {
					t.Fatalf("error without a position in the file (%d lines): %v", lines, e)
				}
				if !strings.HasPrefix(e.Error(), fmt.Sprintf("fuzz.toml:%d:%d: ", e.Pos.Line, e.Pos.Column)) || strings.Contains(e.Error(), "\n") {
					t.Fatalf("badly formed: %q", e.Error())
				}
			}
			return
		}
		checkRoundTrip(t, c)
	})
}

func TestGenValueCoversRegistry(t *testing.T) {
	// Every setting can be generated, so the property covers every type of
	// value and every validator; a new custom validator needs a pool.
	rapid.Check(t, func(rt *rapid.T) {
		for _, e := range registry {
			v := genValue(rt, e)
			if err := e.Validator.Check(v); err != nil {
				rt.Fatalf("%s: generated %v fails: %v", e.Name, v, err)
			}
		}
	})
}
