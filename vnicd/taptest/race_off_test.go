//go:build !race

package taptest

const raceEnabled = false
