//go:build race

package encap_test

// raceEnabled reports a build with the race detector, under which allocation
// counts mean nothing (sync.Pool drops items on purpose).
const raceEnabled = true
