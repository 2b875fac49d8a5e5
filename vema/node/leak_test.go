package node

import (
	"testing"

	"github.com/opavnic/opavnic/internal/leakcheck"
)

// TestMain fails the package's tests when any of them leaves goroutines of
// this module running (an engine, HFI, agent or server not fully stopped).
func TestMain(m *testing.M) { leakcheck.Main(m) }
