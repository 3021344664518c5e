package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Segment file header, written once when the file is created and synced
// before any record follows it:
//
//	magic       [8]byte  "WRENWAL\x00"
//	version     uint16   BE, 1
//	flags       uint16   BE, flagLogStart or 0
//	firstIndex  uint64   BE, index of the file's first record; equals the
//	                     number in the file name
//	crc         uint32   BE, CRC-32C (Castagnoli) of the 20 bytes above
//
// Part of the on-disk format; never change.
const (
	fileHeaderBytes = 24
	fileVersion     = 1
)

// fileMagic opens every segment file. Part of the on-disk format; never change.
var fileMagic = [8]byte{'W', 'R', 'E', 'N', 'W', 'A', 'L', 0}

// flagLogStart marks a file created by TruncatePrefix beyond the end of the
// log: every older file is a leftover of that truncation, and recovery
// removes them. Part of the on-disk format; never change.
const flagLogStart uint16 = 1

// Record framing, back to back after the file header:
//
//	length   uint32  BE, payload bytes
//	crc      uint32  BE, CRC-32C (Castagnoli) of the 4 length bytes, then
//	                 the payload
//	payload  [length]byte
//
// The CRC covers the length too, so that a run of zero bytes (a hole left by
// a torn write, or a zero-filled tail) never reads as a valid empty record:
// the CRC-32C of four zero bytes is not zero.
//
// Part of the on-disk format; never change.
const recordHeaderBytes = 8

// Limits. maxRecordBytesLimit bounds MaxRecordBytes and what recovery
// accepts from disk, whatever the options of the process that wrote it;
// maxSegmentBytesLimit keeps every record offset inside a uint32 even when
// one maximal record overflows a segment.
const (
	maxRecordBytesLimit  = 256 << 20
	maxSegmentBytesLimit = 1 << 30
	minSegmentBytes      = fileHeaderBytes + recordHeaderBytes
	// maxIndex keeps indexes representable as the GroupCommitter's int64
	// positions, with room for a segment's worth of records on top.
	maxIndex = 1 << 62
)

// segmentSuffix and segmentNameDigits make a segment's name: its first index
// in 20 zero-padded digits, so names sort like indexes. Part of the on-disk
// format; never change.
const (
	segmentSuffix     = ".wal"
	segmentNameDigits = 20
	lockFileName      = "LOCK"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func segmentName(firstIndex uint64) string {
	return fmt.Sprintf("%020d%s", firstIndex, segmentSuffix)
}

// parseSegmentName returns the first index a segment file name carries, and
// false for any other name (the lock file, temporary files of other tools).
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != segmentNameDigits {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

type fileHeader struct {
	version    uint16
	flags      uint16
	firstIndex uint64
}

func encodeFileHeader(firstIndex uint64, flags uint16) []byte {
	b := make([]byte, fileHeaderBytes)
	copy(b, fileMagic[:])
	binary.BigEndian.PutUint16(b[8:], fileVersion)
	binary.BigEndian.PutUint16(b[10:], flags)
	binary.BigEndian.PutUint64(b[12:], firstIndex)
	binary.BigEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
	return b
}

// decodeFileHeader reports ok=false for bytes that are not a whole, intact
// header: short, wrong magic or wrong CRC. Such a header can only be a torn
// file creation. A header that is intact but of another version is returned
// as is; the caller refuses it.
func decodeFileHeader(b []byte) (fileHeader, bool) {
	if len(b) < fileHeaderBytes || [8]byte(b[:8]) != fileMagic {
		return fileHeader{}, false
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.BigEndian.Uint32(b[20:]) {
		return fileHeader{}, false
	}
	return fileHeader{
		version:    binary.BigEndian.Uint16(b[8:]),
		flags:      binary.BigEndian.Uint16(b[10:]),
		firstIndex: binary.BigEndian.Uint64(b[12:]),
	}, true
}

// appendRecord appends the framing and payload of one record to dst.
func appendRecord(dst, payload []byte) []byte {
	var h [recordHeaderBytes]byte
	binary.BigEndian.PutUint32(h[:4], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(h[:4], castagnoli), castagnoli, payload)
	binary.BigEndian.PutUint32(h[4:], crc)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// recordCRC is the CRC a record header must carry for payload.
func recordCRC(header, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(header[:4], castagnoli), castagnoli, payload)
}

// decodeRecord checks one whole record read back from disk (framing plus
// payload, nothing more) and returns its payload, aliasing b.
func decodeRecord(b []byte) ([]byte, error) {
	if len(b) < recordHeaderBytes {
		return nil, fmt.Errorf("%w: record of %d bytes is shorter than its header", ErrCorrupt, len(b))
	}
	n := binary.BigEndian.Uint32(b[:4])
	if int64(n) != int64(len(b)-recordHeaderBytes) {
		return nil, fmt.Errorf("%w: record length %d, expected %d", ErrCorrupt, n, len(b)-recordHeaderBytes)
	}
	payload := b[recordHeaderBytes:]
	if recordCRC(b, payload) != binary.BigEndian.Uint32(b[4:8]) {
		return nil, fmt.Errorf("%w: record CRC mismatch", ErrCorrupt)
	}
	return payload, nil
}
