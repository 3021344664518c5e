//go:build race

package assign

// raceEnabled: the race detector changes allocation sizes.
const raceEnabled = true
