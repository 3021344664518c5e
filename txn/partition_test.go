package txn

import (
	"testing"

	"github.com/wren-broker/wren/groups"
)

// TestPartitionFor: a transactional id maps to its __transaction_state
// partition exactly as Kafka maps it (Utils.abs(String.hashCode) % n),
// which is groups.PartitionFor's mapping; the values are Kafka's.
func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		id   string
		n    int32
		want int32
	}{
		// "polygenelubricants".hashCode() is Integer.MIN_VALUE: Kafka's
		// Utils.abs gives 0.
		{"polygenelubricants", 50, 0},
		{"a", 50, 97 % 50},
		{"", 50, 0},
	} {
		if got := PartitionFor(c.id, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.id, c.n, got, c.want)
		}
	}
	for _, id := range []string{"tx", "billing-1", "é", "😀-id", "zombie-id", "a-much-longer-transactional-id-0123456789"} {
		for _, n := range []int32{1, 3, 50} {
			if got, want := PartitionFor(id, n), groups.PartitionFor(id, n); got != want {
				t.Errorf("PartitionFor(%q, %d) = %d, groups.PartitionFor = %d", id, n, got, want)
			}
		}
	}
}
