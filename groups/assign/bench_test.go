package assign

import (
	"fmt"
	"testing"
)

// benchGroup is 100 members and 1000 partitions (10 topics of 100). Every
// member subscribes to all topics (homogeneous) or to 5 consecutive ones.
// With sticky, the members own a balanced assignment computed for 101
// members, one of whom has left: the common rebalance.
func benchGroup(b *testing.B, homogeneous, sticky bool) ([]Member, []Topic) {
	var topics []Topic
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("topic-%02d", i)
		names = append(names, name)
		topics = append(topics, Topic{Name: name, Partitions: 100})
	}
	members := make([]Member, 101)
	for i := range members {
		members[i] = Member{MemberID: fmt.Sprintf("consumer-%03d-%08x", i, uint32(i)*2654435761), Topics: names, Generation: 7}
		if !homogeneous {
			members[i].Topics = nil
			for k := range 5 {
				members[i].Topics = append(members[i].Topics, names[(i+k)%len(names)])
			}
		}
	}
	if sticky {
		prev, err := Sticky(members, topics)
		if err != nil {
			b.Fatal(err)
		}
		for i := range members {
			members[i].Owned = prev[members[i].MemberID]
		}
	}
	return members[1:], topics
}

func BenchmarkAssign(b *testing.B) {
	for _, name := range allAssignors {
		for _, homogeneous := range []bool{true, false} {
			a, _ := ByName(name)
			b.Run(fmt.Sprintf("%s/homogeneous=%v", name, homogeneous), func(b *testing.B) {
				members, topics := benchGroup(b, homogeneous, true)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := a(members, topics); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDecodeSubscription(b *testing.B) {
	members, _ := benchGroup(b, true, true)
	in := EncodeSubscription(CooperativeStickyName, members[0])
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSubscription(CooperativeStickyName, "m", "", in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStickySkewed is the balance loop's hard case: one member owns
// all 1000 partitions and the other 99, each on 5 of the 10 topics, own
// nothing.
func BenchmarkStickySkewed(b *testing.B) {
	members, topics := benchGroup(b, false, false)
	for _, t := range topics {
		for p := range t.Partitions {
			members[0].Owned = append(members[0].Owned, TopicPartition{t.Name, p})
		}
	}
	for i := range members[0].Topics {
		members[0].Topics[i] = topics[i].Name
	}
	members[0].Topics = append(members[0].Topics, topics[5].Name, topics[6].Name, topics[7].Name, topics[8].Name, topics[9].Name)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sticky(members, topics); err != nil {
			b.Fatal(err)
		}
	}
}
