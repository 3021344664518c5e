//go:build race

package producer

// raceEnabled: the race detector changes allocation counts, which some
// tests measure.
const raceEnabled = true
