package fm

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// Management packets the FM cannot decode are dropped and counted.
func TestBadMADsCounted(t *testing.T) {
	net := hfitest.NewNetwork()
	cfg := mustConfig(t, testFabric)
	f := New(hfi.New(net.Listen(fmEP), hfi.Config{LID: cfg.FM.LID, TrustAnyMgmtSource: true}), cfg, nil)
	good := announceFrom(0x1234, epA)
	for _, tc := range []struct {
		name string
		mad  []byte
	}{
		{"short header", good.mad[:10]},
		{"announce cut short", good.mad[:vema.MADHeaderLen+4]},
		{"unknown class", func() []byte {
			b := append([]byte(nil), good.mad...)
			b[1] = 0x77
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.BadMADs.Load()
			f.mu.Lock()
			f.handle(&inbound{mad: tc.mad, slid: encap.LID16BPermissive, src: epA})
			f.mu.Unlock()
			if f.BadMADs.Load() != before+1 {
				t.Errorf("BadMADs %d -> %d, want one more", before, f.BadMADs.Load())
			}
		})
	}
	if len(f.nodes) != 0 {
		t.Errorf("a bad MAD made %d nodes", len(f.nodes))
	}
}
