package replication

// partitionFetchBytes is what a follower asks of each partition in one
// fetch: replica.fetch.max.bytes, or an equal share of
// replica.fetch.response.max.bytes when that share is larger.
//
// Why more than Kafka's per-partition amount: under flush policy ack a
// follower fdatasyncs every fetch round before it fetches again (its next
// fetch offset must be durable when it counts toward the high watermark),
// so a round costs about one fdatasync and one round trip however much it
// carries. With the few partitions per leader of an edge cluster, 1 MiB
// per partition per round caps replication, and every acks=all producer
// behind it, at about 1 MiB per partition per fdatasync: measured on a
// three-node loopback cluster, 6 partitions, rounds came back full at
// 2 MiB per leader and acks=all throughput was less than half of what it
// was with bigger rounds. The response as a whole stays bounded by
// replica.fetch.response.max.bytes, as the leader enforces it too.
func partitionFetchBytes(partitionMaxBytes, responseMaxBytes int32, partitions int) int32 {
	if partitions <= 0 || responseMaxBytes <= 0 {
		return partitionMaxBytes
	}
	return max(partitionMaxBytes, int32(int64(responseMaxBytes)/int64(partitions)))
}
