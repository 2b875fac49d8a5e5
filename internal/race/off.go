//go:build !race

package race

// Enabled reports a build with the race detector.
const Enabled = false
