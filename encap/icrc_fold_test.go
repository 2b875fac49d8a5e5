package encap_test

import (
	"math/rand/v2"
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// TestICRCFolded checks ICRC, which now folds the body, against the spec's
// definition (refICRC, hash/crc32 over a masked copy) for every packet
// length from the shortest to past a jumbo frame, on random bytes.
func TestICRCFolded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pkt := make([]byte, 9400)
	for i := range pkt {
		pkt[i] = byte(rng.Uint32())
	}
	for n := 24; n <= len(pkt); n++ {
		if got, want := encap.ICRC(pkt[:n]), refICRC(pkt[:n]); got != want {
			t.Fatalf("length %d: ICRC %#x, want %#x", n, got, want)
		}
	}
}
