package wire

import "github.com/wren-broker/wren/internal/vfs"

// FileSlice is a byte range of a file (a segment's records, as the engine
// reads them): what a spliced response sends with sendfile. The engine
// returns its reads as FileSlices; this package only writes them.
type FileSlice struct {
	File     vfs.File
	Position int64
	Size     int64
}
