//go:build linux

package engine_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vnicd/engine"
	"github.com/opavnic/opavnic/vnicd/nstest"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// TestDataPlaneQueues runs two engines with two queues each (a queue group
// of two UDP sockets, multiqueue TAPs, a poll loop per queue): 24 TCP
// connections carry 1 MB each across, every byte arrives (checked by
// SHA-256), every queue of both hosts carried traffic both ways, and no
// frame was dropped in the offload paths. The kernel puts each flow on a
// TAP queue by its hash and the queue group on a socket by its entropy, so
// with 24 flows a queue left idle is a fault (a chance of about 2^-23 per
// queue and direction otherwise).
//
// It runs with two queues on both hosts, and with one on either: a host
// with one queue talks to one with two as to any other.
func TestDataPlaneQueues(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ping")
	for _, qs := range [][2]int{{2, 2}, {1, 2}, {2, 1}} {
		t.Run(fmt.Sprintf("a%d-b%d", qs[0], qs[1]), func(t *testing.T) { testDataPlaneQueues(t, qs[0], qs[1]) })
	}
}

func testDataPlaneQueues(t *testing.T, qa, qb int) {
	sfx := fmt.Sprintf("%d%d", qa, qb)
	a, b := pairUp(t, newQueuedHost(t, "qua"+sfx, qa), newQueuedHost(t, "qub"+sfx, qb))
	a.addPort(t, 0, lidA, 1, "192.168.74.1/24")
	b.addPort(t, 0, lidB, 1, "192.168.74.2/24")
	a.ns.PingWithin(t, "192.168.74.2", 5*time.Second)
	for _, h := range []struct {
		h      *pollHost
		queues int
	}{{a, qa}, {b, qb}} {
		if got := h.h.engine.Queues(); got != h.queues {
			t.Fatalf("engine has %d queues, want %d", got, h.queues)
		}
		if got := h.h.engine.Port(0).Queues(); got != h.queues {
			t.Fatalf("port 0 is carried on %d queues, want %d", got, h.queues)
		}
	}

	transferFlows(t, a, b, "192.168.74.2", 24, 1<<20)

	for _, h := range []struct {
		name string
		h    *pollHost
	}{{"a", a}, {"b", b}} {
		qc := h.h.engine.QueueCounters()
		t.Logf("host %s queues: %+v", h.name, qc)
		for i, q := range qc {
			// Host a sends the data and receives ACKs; host b the reverse.
			if len(qc) > 1 && (q.RxPackets < 10 || q.TxFrames < 10) {
				t.Errorf("host %s queue %d carried little or nothing: %+v", h.name, i, q)
			}
			if q.RxMisrouted != 0 { // the sender keeps flows apart, loopback merges nothing
				t.Errorf("host %s queue %d read %d packets of another queue", h.name, i, q.RxMisrouted)
			}
		}
		c := counters(h.h, 0)
		if c["offload_drops"] != 0 || c["rx_fifo_errors"] != 0 || c["tx_fifo_errors"] != 0 {
			t.Errorf("host %s: offload_drops %d rx_fifo_errors %d tx_fifo_errors %d", h.name,
				c["offload_drops"], c["rx_fifo_errors"], c["tx_fifo_errors"])
		}
	}
}

// TestDataPlaneQueuesOneQueueDevice: on a two-queue data plane, a port
// whose device has one queue (a persistent single-queue TAP taken over,
// here a factory that makes one) is carried by the first loop, and the
// frames the second queue receives for it are written through its device:
// every flow arrives whole, and host b's second queue received datagrams
// but read no frames.
func TestDataPlaneQueuesOneQueueDevice(t *testing.T) {
	nstest.RequireRoot(t)
	nstest.RequireTools(t, "ping")
	single := func(s engine.DeviceSpec) (tap.Netdev, error) {
		s.Queues = 1
		return engine.TAPFactory(nil)(s)
	}
	a, b := pairUp(t, newQueuedHost(t, "qsa", 2), newQueuedHostWith(t, "qsb", 2, single))
	a.addPort(t, 0, lidA, 1, "192.168.75.1/24")
	b.addPort(t, 0, lidB, 1, "192.168.75.2/24")
	a.ns.PingWithin(t, "192.168.75.2", 5*time.Second)
	if got := b.engine.Port(0).Queues(); got != 1 {
		t.Fatalf("host b's port is carried on %d queues, want 1", got)
	}
	transferFlows(t, a, b, "192.168.75.2", 16, 256<<10)
	qc := b.engine.QueueCounters()
	t.Logf("host b queues: %+v", qc)
	if len(qc) != 2 || qc[1].RxPackets == 0 || qc[1].TxFrames != 0 || qc[0].TxFrames == 0 {
		t.Errorf("host b's queues %+v: want the second to receive and read nothing from the TAP", qc)
	}
}

// transferFlows sends flows TCP connections of size bytes each from host a
// to host b's addr at once, and checks every byte by SHA-256.
func transferFlows(t *testing.T, a, b *pollHost, addr string, flows, size int) {
	t.Helper()
	var ln net.Listener
	if err := b.ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", addr+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	payload := func(flow int) []byte {
		r := rand.New(rand.NewPCG(uint64(flow), 42))
		p := make([]byte, size)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		return p
	}
	deadline := time.Now().Add(30 * time.Second)
	got := make(chan string, flows)
	go func() { // the receiver: each connection's first byte names its flow
		for range flows {
			c, err := ln.Accept()
			if err != nil {
				got <- fmt.Sprintf("accept: %v", err)
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(deadline)
				var id [1]byte
				if _, err := io.ReadFull(c, id[:]); err != nil {
					got <- fmt.Sprintf("read flow id: %v", err)
					return
				}
				h := sha256.New()
				n, err := io.Copy(h, c)
				want := sha256.Sum256(payload(int(id[0])))
				switch {
				case err != nil || n != int64(size):
					got <- fmt.Sprintf("flow %d: %d of %d bytes: %v", id[0], n, size, err)
				case !bytes.Equal(h.Sum(nil), want[:]):
					got <- fmt.Sprintf("flow %d: the bytes differ", id[0])
				default:
					got <- ""
				}
			}()
		}
	}()
	var wg sync.WaitGroup
	for f := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c net.Conn
			if err := a.ns.Do(func() (err error) {
				c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
				return err
			}); err != nil {
				got <- fmt.Sprintf("flow %d: dial: %v", f, err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(deadline)
			if _, err := c.Write(append([]byte{byte(f)}, payload(f)...)); err != nil {
				got <- fmt.Sprintf("flow %d: write: %v", f, err)
			}
		}()
	}
	for range flows {
		select {
		case msg := <-got:
			if msg != "" {
				t.Error(msg)
			}
		case <-time.After(time.Until(deadline) + time.Second):
			t.Fatal("the transfers did not end within 30 s")
		}
	}
	wg.Wait()

}
