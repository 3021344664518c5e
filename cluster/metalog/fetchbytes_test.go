package metalog

import "testing"

// A fetch answer keeps its entries within MaxFetchBytes, but always
// carries the first, however large, so a follower never stalls.
func TestBoundBytes(t *testing.T) {
	ents := func(sizes ...int) []Entry {
		var out []Entry
		for _, s := range sizes {
			out = append(out, Entry{Data: make([]byte, s)})
		}
		return out
	}
	for _, c := range []struct {
		sizes []int
		limit int
		want  int
	}{
		{[]int{10, 10, 10}, 0, 3},
		{[]int{10, 10, 10}, 25, 2},
		{[]int{10, 10, 10}, 30, 3},
		{[]int{100, 10}, 25, 1},
		{[]int{}, 25, 0},
	} {
		if got := len(boundBytes(ents(c.sizes...), c.limit)); got != c.want {
			t.Errorf("sizes %v limit %d: %d entries, want %d", c.sizes, c.limit, got, c.want)
		}
	}
}
