package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// TestE2EPeerDown: in static mode a peer that is down was not seen at all
// (UDP has no connection; the ICMP errors its datagrams brought back were
// dropped by the kernel). Now, when host b's vnicd stops, host a's
// datagrams to it come back as ICMP port unreachable, and `vnicctl fabric`
// shows that against b's LID, with who said so, and `vnicctl hfi` counts
// them in xmit_peer_errors; a's data plane runs on, so that traffic flows
// again as soon as b's vnicd is back. When b's underlay address goes (the
// host no longer answers ARP), the error is "no route to host", from a's
// own stack, once the kernel gives up on b's neighbour entry.
func TestE2EPeerDown(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ping")
	a, b, vethA, vethB, da, db := attackHosts(t, "pdn", nil)
	ping(t, a, "192.168.101.2")
	// Host a's first frames may have reached b before b's vnicd listened:
	// those errors are real, and counted.
	before := da.hfiCounters(t)["xmit_peer_errors"]
	ping(t, a, "192.168.101.2")
	if n := da.hfiCounters(t)["xmit_peer_errors"]; n != before {
		t.Fatalf("xmit_peer_errors %d -> %d with both hosts up", before, n)
	}

	if err := db.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = db.cmd.Wait()
	waitPeerError(t, a, da, "connection refused (ICMP port unreachable from 10.200.0.2)")
	if n := da.hfiCounters(t)["xmit_peer_errors"]; n <= before {
		t.Fatalf("xmit_peer_errors %d, as before b stopped", n)
	}

	// b back: traffic flows at once, the errors notwithstanding.
	db = startVnicd(t, b, pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.101.2/24"))
	a.PingWithin(t, "192.168.101.2", 10*time.Second)

	if _, err := b.Exec(context.Background(), "ip", "addr", "del", "10.200.0.2/24", "dev", vethB); err != nil {
		t.Fatal(err)
	}
	// a's neighbour entry for b would stay reachable for up to 45 s, then
	// be probed for 8 s more before the kernel gives up on it: flushed,
	// a's next datagram asks ARP at once and gives up after 3 s.
	if _, err := a.Exec(context.Background(), "ip", "neigh", "flush", "dev", vethA); err != nil {
		t.Fatal(err)
	}
	waitPeerError(t, a, da, "no route to host (ICMP host unreachable from 10.200.0.1)")
}

// waitPeerError sends to b's VNIC from a (pings, which go unanswered) until
// a's `fabric` shows want as the start of host b's error, with an error
// since the call, for at most 20 s.
func waitPeerError(t *testing.T, a *nstest.NS, da *daemon, want string) {
	t.Helper()
	lid := encap.LID(lidB).String()
	var last string
	start := da.hfiCounters(t)["xmit_peer_errors"]
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		_, _ = a.Exec(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "1", "192.168.101.2")
		var entries []vnicd.FabricEntry
		if err := vnicd.Call(da.socket, "fabric", nil, &entries); err != nil {
			t.Fatal(err)
		}
		last = fmt.Sprintf("%+v", entries)
		for _, e := range entries {
			if e.LID == lid && strings.HasPrefix(e.Error, want) && da.hfiCounters(t)["xmit_peer_errors"] > start {
				t.Logf("host a's fabric: %s at %s: %s", e.LID, e.Endpoint, e.Error)
				return
			}
		}
	}
	t.Fatalf("host a's fabric never showed %q for %s within 20 s; last: %s", want, lid, last)
}
