//go:build linux

package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The child is this test binary re-executed: TestMain runs it as the child
// when the environment says so, as main does.
func TestMain(m *testing.M) {
	runChildIfAsked()
	os.Exit(m.Run())
}

// TestMeasure: the line has each figure, each a positive duration, and the
// round trips cost more than one system call (each is four and two
// switches), so that a child that never ran, or a figure taken from the
// wrong clock, fails.
func TestMeasure(t *testing.T) {
	line, err := measure(1000)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(line)
	re := regexp.MustCompile(`^system call ([0-9.]+) us; pipe round trip \(two thread switches\) ([0-9.]+) us on one CPU(?:, ([0-9.]+) us across two| \(one CPU allowed: no figure across two\))$`)
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %q does not have the expected form", line)
	}
	sc, _ := strconv.ParseFloat(m[1], 64)
	if sc <= 0 {
		t.Errorf("system call %v us, want > 0", sc)
	}
	for _, s := range m[2:] {
		if s == "" {
			continue
		}
		rt, _ := strconv.ParseFloat(s, 64)
		if rt <= sc {
			t.Errorf("round trip %v us, want more than one system call (%v us)", rt, sc)
		}
	}
}
