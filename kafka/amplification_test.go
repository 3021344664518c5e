package kafka

import (
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// amplification is what decoding one key costs in memory per frame byte,
// at its worst over versions.
type amplification struct {
	key kmsg.Key
	// dense is bytes allocated per frame byte for a valid request made of
	// as many empty elements as fit, at the worst array path.
	dense     float64
	densePath string
	// chain bounds a request that fails to decode deep inside: each level
	// of the worst path allocated its array before the error, so the
	// ratios of the levels add up.
	chain float64
	// tags is the ratio for a body ending in distinct unknown tags, which
	// kmsg keeps in a map (flexible versions only).
	tags float64
}

func (a amplification) worst() float64 { return max(a.dense, a.chain, a.tags) }

const amplificationBodyBytes = 64 << 10

// measureAmplification encodes, for every version of key and every path of
// nested arrays (up to depth 4), a request with one element at each
// ancestor and N zero-value elements at the end of the path, sized near
// amplificationBodyBytes; decodes it into a fresh request and counts the
// bytes allocated. Zero-value elements encode to the minimum wire size, so
// this is the densest valid frame for that path.
func measureAmplification(t testing.TB, key kmsg.Key) amplification {
	a := amplification{key: key}
	proto := kmsg.RequestForKey(int16(key))
	paths := arrayPaths(reflect.TypeOf(proto).Elem(), nil, 4)
	for version := int16(0); version <= proto.MaxVersion(); version++ {
		ratios := make(map[string]float64)
		for _, path := range paths {
			r, ok := denseRatio(t, key, version, path)
			if !ok {
				continue
			}
			name := pathName(reflect.TypeOf(proto).Elem(), path)
			ratios[fmt.Sprint(path)] = r
			if r > a.dense {
				a.dense, a.densePath = r, fmt.Sprintf("v%d %s", version, name)
			}
			chain := 0.0
			for i := 1; i <= len(path); i++ {
				chain += ratios[fmt.Sprint(path[:i])]
			}
			a.chain = max(a.chain, chain)
		}
		probe := kmsg.RequestForKey(int16(key))
		probe.SetVersion(version)
		if probe.IsFlexible() {
			a.tags = max(a.tags, tagRatio(t, key, version))
		}
	}
	return a
}

// arrayPaths lists the field-index paths of every slice field reachable
// through slices of structs.
func arrayPaths(st reflect.Type, prefix []int, depth int) [][]int {
	if depth == 0 {
		return nil
	}
	var out [][]int
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() == reflect.Uint8 {
			continue
		}
		p := append(slices.Clone(prefix), i)
		out = append(out, p)
		if f.Type.Elem().Kind() == reflect.Struct {
			out = append(out, arrayPaths(f.Type.Elem(), p, depth-1)...)
		}
	}
	return out
}

func pathName(st reflect.Type, path []int) string {
	name := ""
	for _, i := range path {
		f := st.Field(i)
		name += "." + f.Name
		st = f.Type.Elem()
	}
	return name[1:]
}

func setDefault(v reflect.Value) {
	if m := v.Addr().MethodByName("Default"); m.IsValid() {
		m.Call(nil)
	}
}

func fillPath(v reflect.Value, path []int, n int) {
	f := v.Field(path[0])
	if len(path) == 1 {
		s := reflect.MakeSlice(f.Type(), n, n)
		if f.Type().Elem().Kind() == reflect.Struct {
			for i := range n {
				setDefault(s.Index(i))
			}
		}
		f.Set(s)
		return
	}
	s := reflect.MakeSlice(f.Type(), 1, 1)
	setDefault(s.Index(0))
	fillPath(s.Index(0), path[1:], n)
	f.Set(s)
}

func encodeWithPath(key kmsg.Key, version int16, path []int, n int) []byte {
	req := kmsg.RequestForKey(int16(key))
	fillPath(reflect.ValueOf(req).Elem(), path, n)
	req.SetVersion(version)
	return req.AppendTo(nil)
}

func denseRatio(t testing.TB, key kmsg.Key, version int16, path []int) (float64, bool) {
	b64, b128 := encodeWithPath(key, version, path, 64), encodeWithPath(key, version, path, 128)
	per := (len(b128) - len(b64)) / 64
	if per <= 0 {
		return 0, false // the path is not part of this version
	}
	body := encodeWithPath(key, version, path, amplificationBodyBytes/per)
	alloc, err := decodeAlloc(key, version, body)
	if err != nil {
		t.Fatalf("%s v%d %v: kmsg cannot read back its own encoding: %v", key.Name(), version, path, err)
	}
	return float64(alloc) / float64(len(body)), true
}

// tagRatio appends distinct unknown tags (numbers from 1000 on, no data)
// to the top-level tag section of a default request.
func tagRatio(t testing.TB, key kmsg.Key, version int16) float64 {
	req := kmsg.RequestForKey(int16(key))
	req.SetVersion(version)
	b := req.AppendTo(nil)
	if len(b) == 0 || b[len(b)-1] != 0 {
		t.Fatalf("%s v%d: default request does not end in an empty tag section", key.Name(), version)
	}
	n := amplificationBodyBytes / 3
	b = binary.AppendUvarint(b[:len(b)-1], uint64(n))
	for i := range n {
		b = binary.AppendUvarint(b, uint64(1000+i))
		b = append(b, 0)
	}
	alloc, err := decodeAlloc(key, version, b)
	if err != nil {
		t.Fatalf("%s v%d: unknown tags rejected: %v", key.Name(), version, err)
	}
	return float64(alloc) / float64(len(b))
}

func decodeAlloc(key kmsg.Key, version int16, body []byte) (uint64, error) {
	req := kmsg.RequestForKey(int16(key))
	req.SetVersion(version)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := req.ReadFrom(body)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(req)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestDecodeAmplification measures the keys of the API table (every kmsg
// key with WREN_KAFKA_AMPLIFICATION=all) and checks that each key's frame
// cap times its worst ratio stays within decodeBudgetBytes, so that one
// request cannot make the broker allocate more than that.
func TestDecodeAmplification(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	var keys []kmsg.Key
	if os.Getenv("WREN_KAFKA_AMPLIFICATION") == "all" {
		for k := int16(0); k < 200; k++ {
			if kmsg.RequestForKey(k) != nil {
				keys = append(keys, kmsg.Key(k))
			}
		}
	} else {
		for _, e := range apiTable {
			keys = append(keys, e.Key)
		}
	}
	var all []amplification
	byKey := make(map[kmsg.Key]amplification)
	for _, k := range keys {
		a := measureAmplification(t, k)
		all = append(all, a)
		byKey[k] = a
	}
	slices.SortFunc(all, func(a, b amplification) int { return int(b.worst()*100) - int(a.worst()*100) })
	for _, a := range all {
		t.Logf("%-32s worst %5.1fx  dense %5.1fx (%s)  chain %5.1fx  tags %5.1fx",
			a.key.Name(), a.worst(), a.dense, a.densePath, a.chain, a.tags)
	}
	for _, e := range apiTable {
		if e.Precheck != nil {
			continue // bounded by its pre-check: TestProducePrecheck
		}
		frameCap := int64(e.MaxRequestBytes)
		if frameCap == 0 {
			frameCap = DefaultMaxRequestBytes
		}
		a := byKey[e.Key]
		if worst := int64(a.worst() * float64(frameCap)); worst > decodeBudgetBytes {
			t.Errorf("%s: frame cap %d x amplification %.1f = %d MiB may be allocated by one request, budget %d MiB: lower its MaxRequestBytes or give it a Precheck",
				e.Key.Name(), frameCap, a.worst(), worst>>20, decodeBudgetBytes>>20)
		}
	}
}

// decodeBudgetBytes is what one request may make the broker allocate while
// decoding, at worst.
const decodeBudgetBytes = 64 << 20
