//go:build !race

package encap_test

const raceEnabled = false
