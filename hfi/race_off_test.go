//go:build !race

package hfi

const raceEnabled = false
