package main

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/internal/e2etest"
	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/ctl"
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
	e2etest.Require(t, "ping")
	a, b, vethA, vethB, da, db := attackHosts(t, "pdn", nil)
	e2etest.Ping(t, a, "192.168.101.2")
	// Host a's first frames may have reached b before b's vnicd listened:
	// those errors are real, and counted.
	before := da.HFICounters(t)["xmit_peer_errors"]
	e2etest.Ping(t, a, "192.168.101.2")
	if n := da.HFICounters(t)["xmit_peer_errors"]; n != before {
		t.Fatalf("xmit_peer_errors %d -> %d with both hosts up", before, n)
	}
	// a's traffic with b: both ways, b heard from just now.
	up := peerEntry(t, da, lidB)
	if *up.RxPackets < 6 || *up.TxPackets < 6 || *up.RxBytes < 6*64 || *up.TxBytes < 6*64 || up.LastRx != "0s ago" && up.LastRx != "1s ago" {
		t.Fatalf("host a's traffic with b after 6 pings each way: %s", describeTraffic(up))
	}

	_ = db.Stop(t, syscall.SIGTERM)
	stopped := peerEntry(t, da, lidB)
	waitPeerError(t, a, da, "connection refused (ICMP port unreachable from 10.200.0.2)")
	if n := da.HFICounters(t)["xmit_peer_errors"]; n <= before {
		t.Fatalf("xmit_peer_errors %d, as before b stopped", n)
	}
	// What a sent since went nowhere: its tx count grows, its rx count does
	// not, and b's last packet ages.
	down := peerEntry(t, da, lidB)
	if *down.TxPackets <= *stopped.TxPackets || *down.RxPackets != *stopped.RxPackets || down.LastRx == "0s ago" {
		t.Fatalf("host a's traffic with b: %s when b stopped, %s after", describeTraffic(stopped), describeTraffic(down))
	}
	t.Logf("host a's traffic with b: %s when b stopped, %s after", describeTraffic(stopped), describeTraffic(down))

	// b back: traffic flows at once, the errors notwithstanding, and a's
	// fabric no longer shows them (they came before b's packets).
	e2etest.Start(t, b, pairHost("host-b", lidB, lidA, "10.200.0.2", "10.200.0.1:4793", "192.168.101.2/24")) // killed by nstest.NS.Start's cleanup
	a.PingWithin(t, "192.168.101.2", 10*time.Second)
	if back := peerEntry(t, da, lidB); back.Error != "" {
		t.Fatalf("host a's fabric shows b's error %q after b answered: %s", back.Error, describeTraffic(back))
	}

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

// peerEntry returns d's `fabric` entry of a unicast LID, with its traffic.
func peerEntry(t *testing.T, d *e2etest.Daemon, lid uint32) ctl.FabricEntry {
	t.Helper()
	var entries []ctl.FabricEntry
	if err := ctl.Call(d.Socket, ctl.CmdFabric, nil, &entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.LID == encap.LID(lid).String() {
			if e.RxPackets == nil || e.RxBytes == nil || e.TxPackets == nil || e.TxBytes == nil || e.LastRx == "" {
				t.Fatalf("fabric entry of %s without its traffic: %+v", e.LID, e)
			}
			return e
		}
	}
	t.Fatalf("no fabric entry for %s in %+v", encap.LID(lid), entries)
	return ctl.FabricEntry{}
}

func describeTraffic(e ctl.FabricEntry) string {
	return fmt.Sprintf("rx %d packets %d bytes, tx %d packets %d bytes, last rx %s", *e.RxPackets, *e.RxBytes, *e.TxPackets, *e.TxBytes, e.LastRx)
}

// waitPeerError sends to b's VNIC from a (pings, which go unanswered) until
// a's `fabric` shows want as the start of host b's error, with an error
// since the call, for at most 20 s.
func waitPeerError(t *testing.T, a *nstest.NS, da *e2etest.Daemon, want string) {
	t.Helper()
	lid := encap.LID(lidB).String()
	var last string
	start := da.HFICounters(t)["xmit_peer_errors"]
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		_ = e2etest.Reaches(a, "192.168.101.2")
		var entries []ctl.FabricEntry
		if err := ctl.Call(da.Socket, ctl.CmdFabric, nil, &entries); err != nil {
			t.Fatal(err)
		}
		last = fmt.Sprintf("%+v", entries)
		for _, e := range entries {
			if e.LID == lid && strings.HasPrefix(e.Error, want) && da.HFICounters(t)["xmit_peer_errors"] > start {
				t.Logf("host a's fabric: %s at %s: %s", e.LID, e.Endpoint, e.Error)
				return
			}
		}
	}
	t.Fatalf("host a's fabric never showed %q for %s within 20 s; last: %s", want, lid, last)
}

// TestE2EForgedICMPFlood: anyone who reaches a host can forge ICMP port
// unreachable quoting its vnicd's datagrams, and the kernel hands each
// such error to vnicd's next read or send instead of its datagram. Under
// a flood of them from b's namespace (as fast as a raw socket sends), a
// 20 MB TCP transfer over the VNIC from a to b must still complete within
// 40 s (it takes about a second here; without vnicd's limit on errors it
// ran at 33 kbit/s, hours), and the limit's trips are counted.
func TestE2EForgedICMPFlood(t *testing.T) {
	e2etest.Require(t, "ping", "iperf3")
	a, b, _, _, da, _ := attackHosts(t, "icf", nil)
	e2etest.Ping(t, a, "192.168.101.2")

	var raw int
	if err := b.Do(func() (err error) {
		raw, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		return err
	}); err != nil {
		t.Fatalf("raw ICMP socket in %s: %v", b.Name(), err)
	}
	icmp := hfitest.ForgedPortUnreachable(netip.MustParseAddrPort("10.200.0.1:4793"), netip.MustParseAddrPort("10.200.0.2:4793"))
	stop, done := make(chan struct{}), make(chan int, 1)
	go func() {
		n := 0
		to := &unix.SockaddrInet4{Addr: [4]byte{10, 200, 0, 1}}
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			for range 100 {
				if unix.Sendto(raw, icmp, 0, to) == nil {
					n++
				}
			}
		}
		done <- n
	}()
	sent := -1
	stopFlood := func() int { // once; also before the namespaces go
		if sent < 0 {
			close(stop)
			sent = <-done
			unix.Close(raw)
		}
		return sent
	}
	t.Cleanup(func() { stopFlood() })

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	e2etest.IperfServer(t, ctx, b, "192.168.101.2")
	start := time.Now()
	out, err := a.Exec(ctx, "iperf3", "-c", "192.168.101.2", "-n", "20M")
	took := time.Since(start)
	stopFlood()
	if err != nil {
		t.Fatalf("20 MB over the VNIC under %d forged ICMP errors: %v after %v\n%s", sent, err, took.Round(time.Millisecond), out)
	}
	c := da.HFICounters(t)
	t.Logf("20 MB in %v under %d forged ICMP errors; host a took %d of them, peer_error_floods %d",
		took.Round(time.Millisecond), sent, c["xmit_peer_errors"], c["peer_error_floods"])
	if c["peer_error_floods"] == 0 {
		t.Errorf("no flood counted (%d errors taken)", c["xmit_peer_errors"])
	}
}

// TestE2EFabricManagerDown: a managed host whose FM is not running says so
// in `vnicctl hfi` (fabric_manager_error: its announces come back as ICMP
// port unreachable), and not once the FM has answered.
func TestE2EFabricManagerDown(t *testing.T) {
	e2etest.Require(t)
	lab := newManagedLab(t, "fmd")
	da := managedHost(t, lab.a, lab.aBlue, "host-a", 1, "", filepath.Join(lab.dir, "a.sock"))
	want := "connection refused (ICMP port unreachable from 10.202.0.3)"
	var st ctl.HFIStatus
	if !waitfor.Poll(20*time.Second, func() bool {
		if err := ctl.Call(da.Socket, ctl.CmdHFI, nil, &st); err != nil {
			st = ctl.HFIStatus{}
		}
		return strings.HasPrefix(st.FabricManagerError, want)
	}) {
		t.Fatalf("with no FM: hfi status %+v; want fabric_manager_error %q", st, want)
	}
	if st.FabricManager != "10.202.0.3:4793" {
		t.Errorf("fabric_manager %q, want 10.202.0.3:4793", st.FabricManager)
	}
	t.Logf("with no FM: fabric_manager_error %s", st.FabricManagerError)

	e2etest.StartFM(t, lab.fmNS, lab.fabric)
	da.WaitVNICs(t, 2, "FORWARDING", 20*time.Second)
	if st := da.HFIStatus(t); st.FabricManagerError != "" {
		t.Errorf("with the FM up: fabric_manager_error %q", st.FabricManagerError)
	}
}
