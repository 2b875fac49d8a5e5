//go:build !race

package vnicd

const raceEnabled = false
