//go:build race

// Package race tells tests whether the race detector is on, under which
// allocation counts mean nothing (sync.Pool drops items on purpose).
package race

// Enabled reports a build with the race detector.
const Enabled = true
