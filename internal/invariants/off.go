//go:build !invariants

package invariants

// Enabled is false in a build without -tags invariants: the checks
// compile away.
const Enabled = false
