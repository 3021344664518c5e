package uplink

import "testing"

func TestSourceRoundTrip(t *testing.T) {
	s := Source{Cluster: "AbC-_1", Topic: "sensors.a", Partition: 3, Offset: 1 << 40}
	got, err := ParseSource([]byte(s.String()))
	if err != nil || got != s {
		t.Fatalf("ParseSource(%q) = %+v, %v", s.String(), got, err)
	}
	for _, bad := range []string{"", "a/b/c", "a/b/1/2/3", "/t/1/2", "c//1/2", "c/t/-1/2", "c/t/1/-2", "c/t/x/2", "c/t/1/99999999999999999999"} {
		if _, err := ParseSource([]byte(bad)); err == nil {
			t.Errorf("ParseSource(%q) accepted", bad)
		}
	}
}

// FuzzParseSource: any bytes are refused or parsed into a value that
// writes back to the same bytes' meaning.
func FuzzParseSource(f *testing.F) {
	f.Add([]byte("cluster/topic/0/0"))
	f.Add([]byte("c/t/2147483647/9223372036854775807"))
	f.Add([]byte("c/t/+1/01"))
	f.Fuzz(func(t *testing.T, v []byte) {
		s, err := ParseSource(v)
		if err != nil {
			return
		}
		again, err := ParseSource([]byte(s.String()))
		if err != nil || again != s {
			t.Fatalf("%q parsed to %+v, which reads back as %+v, %v", v, s, again, err)
		}
	})
}
