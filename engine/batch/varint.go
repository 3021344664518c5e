package batch

// Kafka's varint and varlong: zigzag, then unsigned LEB128 (ByteUtils).
// Readers refuse encodings longer than 5 (varint) or 10 (varlong) bytes and
// bits beyond 32 or 64; Java's reader would silently drop such bits, but no
// client writes them and accepting them would let two byte strings mean
// the same record.

// readVarint decodes a varint at the start of b. ok is false when b ends
// first or the encoding is too long.
func readVarint(b []byte) (v int32, n int, ok bool) {
	var u uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, false
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, false
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1, true
		}
	}
	return 0, 0, false
}

// readVarlong decodes a varlong at the start of b.
func readVarlong(b []byte) (v int64, n int, ok bool) {
	var u uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0, false
		}
		c := b[i]
		if i == 9 && c > 0x01 {
			return 0, 0, false
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1, true
		}
	}
	return 0, 0, false
}

func appendUvarint(dst []byte, u uint64) []byte {
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

func appendVarint(dst []byte, v int32) []byte {
	return appendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendVarlong(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func uvarintSize(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func varintSize(v int32) int  { return uvarintSize(uint64(uint32(v<<1) ^ uint32(v>>31))) }
func varlongSize(v int64) int { return uvarintSize(uint64(v<<1) ^ uint64(v>>63)) }
