//go:build race

package kafka

// raceEnabled: the race detector changes allocation sizes, which some
// tests measure.
const raceEnabled = true
