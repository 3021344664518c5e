package cluster

// ImageOf is the image that a metadata log holding records, in order,
// commits: what every node would apply. It is how code without a
// controller (tools, and the kafka package's handler tests) gets an image;
// records are checked as the log's are, so an image that no controller
// could have written is an error.
func ImageOf(records ...Record) (*Image, error) {
	im := emptyImage()
	for i, r := range records {
		next, err := im.apply(uint64(i+1), r)
		if err != nil {
			return nil, err
		}
		im = next
	}
	return im, nil
}

// With is the image after one more metadata-log entry holding records;
// im is left as it was. The new image shares with im every topic the
// records do not touch, as a node's next image does.
func (im *Image) With(records ...Record) (*Image, error) {
	return applyRecords(im, im.Offset+1, records)
}
