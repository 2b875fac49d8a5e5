package e2etest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/internal/waitfor"
	"github.com/opavnic/opavnic/vnicd/nstest"
)

// Require skips t (or fails it, by nstest's rules for CI) unless it can run
// an end-to-end test: as root, with /dev/net/tun and tools on PATH.
func Require(t testing.TB, tools ...string) {
	t.Helper()
	nstest.RequireRoot(t)
	nstest.RequirePaths(t, "/dev/net/tun")
	nstest.RequireTools(t, tools...)
}

// Ping sends 3 pings 0.2 s apart from ns with args (ping's options, then
// the address), each waiting at most 2 s for its answer, and fails t unless
// they are answered; it logs ping's summary.
func Ping(t testing.TB, ns *nstest.NS, args ...string) {
	t.Helper()
	out, err := ns.Exec(context.Background(), "ping", append([]string{"-c", "3", "-i", "0.2", "-W", "2"}, args...)...)
	if err != nil {
		t.Fatalf("ping %v from %s: %v", args, ns.Name(), err)
	}
	t.Logf("ping %s from %s: %s", strings.Join(args, " "), ns.Name(), LastLines(out, 1))
}

// Reaches sends 2 pings 0.2 s apart from ns with args, each waiting at
// most 1 s, and returns ping's error: nil when they were answered. A test
// that expects no answer checks for an error.
func Reaches(ns *nstest.NS, args ...string) error {
	_, err := ns.Exec(context.Background(), "ping", append([]string{"-c", "2", "-i", "0.2", "-W", "1"}, args...)...)
	return err
}

// Silent fails t (Errorf) unless pings from ns to addr, one a second for
// d, all go unanswered; what says why they should.
func Silent(t testing.TB, ns *nstest.NS, addr string, d time.Duration, what string) {
	t.Helper()
	secs := fmt.Sprint(max(1, int(d.Seconds())))
	if out, err := ns.Exec(context.Background(), "ping", "-c", secs, "-i", "1", "-W", "1", addr); err == nil {
		t.Errorf("%s: %s still reached %s:\n%s", what, ns.Name(), addr, LastLines(out, 2))
	}
}

// LastLines returns the last n lines of b, without trailing space.
func LastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// IperfPort is the TCP port iperf3's server listens on.
const IperfPort = 5201

// IperfServer starts a one-off iperf3 server (iperf3 -s -1) in ns bound to
// addr and returns once it listens; ctx bounds its life.
func IperfServer(t testing.TB, ctx context.Context, ns *nstest.NS, addr string) {
	t.Helper()
	if _, err := ns.Start(ctx, "iperf3", "-s", "-1", "-B", addr); err != nil {
		t.Fatal(err)
	}
	WaitListening(t, ns, IperfPort, 10*time.Second)
}

// Iperf runs a TCP iperf3 test of seconds with streams parallel streams
// (iperf3 -P) from client to an iperf3 server it starts in server at addr,
// and returns the received rate in bit/s.
func Iperf(t testing.TB, client, server *nstest.NS, addr string, seconds, streams int) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+20)*time.Second)
	defer cancel()
	IperfServer(t, ctx, server, addr)
	out, err := client.Exec(ctx, "iperf3", "-c", addr, "-t", fmt.Sprint(seconds), "-P", fmt.Sprint(streams), "-J")
	var r struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("iperf3 to %s: %v (JSON: %v)", addr, err, jerr)
	}
	if r.Error != "" || err != nil {
		t.Fatalf("iperf3 to %s: %v: %s", addr, err, r.Error)
	}
	return r.End.SumReceived.BitsPerSecond
}

// WaitListening waits, at most within, until a TCP socket of ns listens on
// port (IPv4 or IPv6), and fails t if none does.
func WaitListening(t testing.TB, ns *nstest.NS, port int, within time.Duration) {
	t.Helper()
	waitfor.Until(t, within, fmt.Sprintf("a TCP listener on port %d in %s", port, ns.Name()), func() bool {
		listening := false
		if err := ns.Do(func() error {
			listening = tcpListening("tcp", port) || tcpListening("tcp6", port)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return listening
	})
}

// tcpListening reports whether /proc/net/<table> of the calling thread's
// namespace has a socket in LISTEN on port.
func tcpListening(table string, port int) bool {
	// thread-self: /proc/net follows the thread group leader's namespace,
	// and only this thread is in the test's.
	f, err := os.Open("/proc/thread-self/net/" + table)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != "0A" { // TCP_LISTEN
			continue
		}
		_, p, ok := strings.Cut(fields[1], ":")
		if v, err := strconv.ParseUint(p, 16, 16); ok && err == nil && int(v) == port {
			return true
		}
	}
	return false
}
