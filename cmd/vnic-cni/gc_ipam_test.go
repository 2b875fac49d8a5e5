package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// TestGCForwardsToIPAM: CNI SPEC.md, GC: "Plugins MUST, additionally,
// forward any GC calls to delegated plugins they are configured to use",
// and "a plugin should remove any IPAM reservations associated with
// attachments not in the provided list". vnic-cni gives the IPAM plugin a
// DEL for each VNIC vnicd gave back, but an address whose VNIC vnicd no
// longer has (vnicd dropped it at a restart because the namespace was
// gone; or vnicd is not running) is released only by the IPAM's own GC.
// The IPAM plugin gets the GC whether or not vnicd answers.
func TestGCForwardsToIPAM(t *testing.T) {
	conf := `{"cniVersion": "1.1.0", "name": "red", "type": "vnic-cni", "vesw": 1, "pkey": "0x8001",
		"cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}], "ipam": {"type": "fakeipam"}}`
	args := &skel.CmdArgs{StdinData: []byte(conf)}
	for _, withVnicd := range []bool{true, false} {
		name := "vnicd answers"
		if !withVnicd {
			name = "no vnicd"
		}
		t.Run(name, func(t *testing.T) {
			useSocketDir(t)
			log := fakeIPAM(t)
			if withVnicd {
				s, err := ctl.Listen(filepath.Join(socketDir, "vnicd-a.sock"), nil)
				if err != nil {
					t.Fatal(err)
				}
				s.Handle(ctl.CmdVNICGC, func(json.RawMessage) (any, error) {
					return ctl.VNICDeleted{Deleted: []ctl.VNICStatus{{Owner: "cni:red:gone:eth0"}}}, nil
				})
				done := make(chan error, 1)
				go func() { done <- s.Serve(t.Context()) }()
				t.Cleanup(func() { s.Close(); <-done })
			}
			if err := cmdGC(args); err != nil {
				t.Fatalf("GC: %v", err)
			}
			b, _ := os.ReadFile(log)
			calls := strings.Split(strings.TrimSpace(string(b)), "\n")
			if !strings.HasPrefix(calls[len(calls)-1], "GC") {
				t.Errorf("IPAM calls %q; want a GC, forwarded", calls)
			}
			if withVnicd && calls[0] != "DEL gone" {
				t.Errorf("IPAM calls %q; want first a DEL of the VNIC vnicd gave back", calls)
			}
		})
	}
}
