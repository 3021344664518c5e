//go:build invariants

package invariants

// Enabled is true in a build with -tags invariants: the cores check their
// invariants after every step.
const Enabled = true
