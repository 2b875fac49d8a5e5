package fm

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/hfi/hfitest"
	"github.com/opavnic/opavnic/vema"
)

// readMACFile parses the MAC file at path; ok is false while it is
// missing or unreadable.
func readMACFile(path string) (map[memberKey]savedMAC, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	s, err := parseMACFile(b)
	return s, err == nil
}

// waitMACFile waits until the MAC file lists member k with learned MAC
// learned (zero: none).
func waitMACFile(t *testing.T, path string, k memberKey, learned [6]byte) {
	t.Helper()
	waitFor(t, "the MAC file to list "+k.node, 3*time.Second, func() bool {
		s, ok := readMACFile(path)
		e, listed := s[k]
		return ok && listed && e.learned == learned
	})
}

// restartFM stops fb's FM and starts one with cfg text and the MAC file.
func restartFM(t *testing.T, fb *fabric, text, macFile string) {
	t.Helper()
	fb.stop()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fb.fm, fb.stop = startFMFile(t, ctx, fb.net, mustConfig(t, text), 500*time.Millisecond, macFile)
	t.Cleanup(func() { fb.stop() })
}

// A fixed `mac` changed while the FM was down is the port's after the FM
// restarts: the MAC file says the port's MAC was the old fixed one, not a
// learned one. (Without the file the FM takes the port's old MAC for a
// learned one and keeps it.)
func TestMACFileFixedMACChangedWhileDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabricFile(t, path)
	old := [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	waitFor(t, "host-b blue configured", 5*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		return vp[1].VPort.BaseMACAddr == old && vp[1].VPort.MACTblDigest != 0
	})
	waitMACFile(t, path, memberKey{2, "host-b", 1}, [6]byte{})
	restartFM(t, fb, strings.Replace(testFabric, `mac: "02:aa:bb:cc:dd:ee"`, `mac: "02:aa:bb:cc:dd:01"`, 1), path)
	want := [6]byte{2, 0xaa, 0xbb, 0xcc, 0xdd, 0x01}
	waitFor(t, "host-b blue with the new fixed MAC", 5*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.b.snapshot()
		_, _, ta, _, _, _ := fb.a.snapshot()
		return vp[1].VPort.BaseMACAddr == want && fb.b.netdevMAC(1) == want && len(ta[1]) == 1 && ta[1][0].MAC == want
	})
	if got := statusMAC(fb.fm, 2, "host-b"); got != "02:aa:bb:cc:dd:01" {
		t.Errorf("the FM reports host-b's MAC as %s", got)
	}
}

// A MAC learned from a trap is kept across an FM restart when the MAC file
// lists it, and replaced when the config gave the member a fixed `mac`
// while the FM was down (as a reload would).
func TestMACFileLearnedMAC(t *testing.T) {
	fixed := [6]byte{2, 0xcc, 0, 0, 0, 1}
	for _, tc := range []struct {
		name, text string
		want       [6]byte
	}{
		{"kept", testFabric, [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}},
		{"fixed mac set while down", strings.Replace(testFabric, "{node: host-c, vport: 0}",
			`{node: host-c, vport: 0, mac: "02:cc:00:00:00:01"}`, 1), fixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fm0.macs.json")
			fb := newFabricFile(t, path)
			x := learnOnC(t, fb)
			waitMACFile(t, path, memberKey{1, "host-c", 0}, x)
			restartFM(t, fb, tc.text, path)
			if tc.want == x {
				for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					if got := fb.c.netdevMAC(0); got != x {
						t.Fatalf("host-c's netdev MAC became % x after the FM restart, want % x", got, x)
					}
				}
			}
			waitFor(t, "host-c's MAC after the restart", 5*time.Second, func() bool {
				_, vp, _, _, _, _ := fb.c.snapshot()
				_, _, ta, _, _, _ := fb.a.snapshot()
				return vp[0].VPort.BaseMACAddr == tc.want && fb.c.netdevMAC(0) == tc.want &&
					len(ta[0]) == 1 && ta[0][0].MAC == tc.want
			})
			wantLearned := tc.want
			if tc.want == fixed {
				wantLearned = [6]byte{}
			}
			waitMACFile(t, path, memberKey{1, "host-c", 0}, wantLearned)
		})
	}
}

// A user who changes a netdev's MAC while the FM is down (the trap is lost)
// has it kept: the restarted FM reads a netdev MAC that differs from the
// port's base_mac_addr and takes it, whatever the MAC file says; set back
// to the config's MAC, the member has no learned MAC any more.
func TestMACFileNetdevChangedWhileDown(t *testing.T) {
	derived := encap.MACForLID(0xC007, 1)
	y := [6]byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}
	for _, tc := range []struct {
		name       string
		learnFirst bool
		set, want  [6]byte
	}{
		{"new MAC", false, y, y},
		{"back to the config's", true, derived, derived},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fm0.macs.json")
			fb := newFabricFile(t, path)
			learned := [6]byte{}
			if tc.learnFirst {
				learned = learnOnC(t, fb)
			} else {
				waitTable(t, fb.c, "host-c configured", 0)
			}
			waitMACFile(t, path, memberKey{1, "host-c", 0}, learned)
			fb.stop()
			fb.c.trapMACChange(0, tc.set) // nobody hears the trap
			restartFM(t, fb, testFabric, path)
			waitFor(t, "host-c's MAC after the restart", 5*time.Second, func() bool {
				_, vp, _, _, _, _ := fb.c.snapshot()
				return vp[0].VPort.BaseMACAddr == tc.want && fb.c.netdevMAC(0) == tc.want
			})
			wantLearned := tc.want
			if tc.want == derived {
				wantLearned = [6]byte{}
			}
			waitMACFile(t, path, memberKey{1, "host-c", 0}, wantLearned)
			if got, want := statusMAC(fb.fm, 1, "host-c"), net.HardwareAddr(tc.want[:]).String(); got != want {
				t.Errorf("the FM reports host-c's MAC as %s, want %s", got, want)
			}
		})
	}
}

// A member the MAC file does not list (its FM had not read it, or the file
// is from before the member) is guessed from its port as without a file.
func TestMACFileGuessesUnlistedMember(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabric(t) // no MAC file yet
	x := learnOnC(t, fb)
	if err := os.WriteFile(path, []byte(`{"version": 1, "fm": "fm0", "members": [{"vesw": 1, "node": "host-a", "vport": 0}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	restartFM(t, fb, testFabric, path)
	waitFor(t, "the new FM to know host-c's MAC", 5*time.Second, func() bool {
		return statusMAC(fb.fm, 1, "host-c") == "02:11:22:33:44:55"
	})
	if got := fb.c.netdevMAC(0); got != x {
		t.Errorf("host-c's netdev MAC is % x, want % x", got, x)
	}
	waitMACFile(t, path, memberKey{1, "host-c", 0}, x)
}

// A MAC file that cannot be parsed is an error from SetMACFile, and the FM
// writes a good one at its first change.
func TestMACFileBad(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"not json", "{", "unexpected EOF"},
		{"version", `{"version": 2, "members": []}`, "version 2"},
		{"unknown field", `{"version": 1, "members": [], "x": 1}`, "unknown field"},
		{"bad mac", `{"version": 1, "members": [{"vesw": 1, "node": "a", "vport": 0, "learned": "02:11"}]}`, `bad MAC "02:11"`},
		{"long mac", `{"version": 1, "members": [{"vesw": 1, "node": "a", "vport": 0, "fixed": "02:00:00:00:00:00:00:01"}]}`, "bad MAC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseMACFile([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := New(hfi.New(hfitest.NewNetwork().Listen(fmEP), hfi.Config{LID: 1}), mustConfig(t, testFabric), nil)
	err := f.SetMACFile(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("SetMACFile on garbage: %v, want an error naming the file", err)
	}
	f.mu.Lock()
	f.members[memberKey{1, "host-a", 0}] = &memberState{adopted: true}
	f.saveMACs()
	f.mu.Unlock()
	if s, ok := readMACFile(path); !ok || len(s) != 1 {
		t.Errorf("after a change the file holds %v (parsed %v), want host-a's entry", s, ok)
	}
	// The file that could not be parsed is kept, not overwritten.
	if b, err := os.ReadFile(path + ".bad"); err != nil || string(b) != "garbage" {
		t.Errorf("the unparsable file set aside: %q, %v; want it as %s.bad", b, err, path)
	}
}

func TestMACFilePath(t *testing.T) {
	for in, want := range map[string]string{
		"/run/opavnic/opafm-fm0.sock": "/run/opavnic/opafm-fm0.macs.json",
		"/tmp/ctl":                    "/tmp/ctl.macs.json",
		"@opafm":                      "",
		"":                            "",
	} {
		if got := MACFilePath(in); got != want {
			t.Errorf("MACFilePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// A MAC a trap sets back to the config's, after a restarted FM could not
// read the port (its VESWPortInfo Gets lost), is what the MAC file holds
// and what a later configure keeps: the learned MAC the file held when the
// FM started is no longer the member's.
func TestMACFileTrapAfterUnansweredPortRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabricFile(t, path)
	x := learnOnC(t, fb)
	k := memberKey{1, "host-c", 0}
	waitMACFile(t, path, k, x)
	fb.c.setDrop(dropping(vema.ClassVEMA, vema.MethodGet, vema.AttrVESWPortInfo))
	d0 := fb.c.droppedCount()
	restartFM(t, fb, testFabric, path)
	waitFor(t, "host-c configured without its port read", 5*time.Second, func() bool {
		return fb.c.droppedCount() >= d0+3 && memberConfigured(fb.fm, "host-c", 0)
	})
	fb.c.setDrop(nil)
	derived := encap.MACForLID(0xC007, 1)
	fb.c.trapMACChange(0, derived)
	waitFor(t, "host-c back on its derived MAC", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.c.snapshot()
		return vp[0].VPort.BaseMACAddr == derived && statusMAC(fb.fm, 1, "host-c") == net.HardwareAddr(derived[:]).String()
	})
	if err := fb.fm.Reload(mustConfig(t, testFabric)); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got := fb.c.netdevMAC(0); got != derived {
			t.Fatalf("host-c's netdev MAC became % x after a reload, want % x", got, derived)
		}
	}
	waitMACFile(t, path, k, [6]byte{})
}

// A member a reload removes (its port deleted) and a later reload adds
// again is made with the config's MAC, as by an FM that never restarted:
// the learned MAC the MAC file held when the FM started went with the
// member.
func TestMACFileMemberRemovedThenReadded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabricFile(t, path)
	x := learnOnC(t, fb)
	waitMACFile(t, path, memberKey{1, "host-c", 0}, x)
	restartFM(t, fb, testFabric, path)
	waitFor(t, "the new FM to know host-c's MAC", 5*time.Second, func() bool {
		return statusMAC(fb.fm, 1, "host-c") == net.HardwareAddr(x[:]).String()
	})
	if err := fb.fm.Reload(mustConfig(t, strings.Replace(testFabric, "      - {node: host-c, vport: 0}\n", "", 1))); err != nil {
		t.Fatal(err)
	}
	waitPorts(t, fb.c, "host-c's red port deleted", 0)
	if err := fb.fm.Reload(mustConfig(t, testFabric)); err != nil {
		t.Fatal(err)
	}
	derived := encap.MACForLID(0xC007, 1)
	waitTable(t, fb.c, "host-c's red port made again", 0)
	if _, vp, _, _, _, _ := fb.c.snapshot(); vp[0].VPort.BaseMACAddr != derived {
		t.Errorf("host-c's red port was made again with % x, want the derived % x", vp[0].VPort.BaseMACAddr, derived)
	}
}

// A MAC file the FM cannot write any more (here: its temporary file's name
// is too long; on a host, a full or read-only /run) does not outlive the
// MACs it holds: a restarted FM must not take it for the truth and set an
// older learned MAC over the one the EM learned since.
func TestMACFileUnwritableNotTrusted(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "fm0.macs.json")
	fb := newFabricFile(t, good)
	x := learnOnC(t, fb)
	k := memberKey{1, "host-c", 0}
	waitMACFile(t, good, k, x)
	// 249 bytes: the file can be, but statefile.Write's temporary file
	// (the name, ".tmp" and digits) is longer than a name may be.
	path := filepath.Join(dir, strings.Repeat("m", 239)+".macs.json")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	restartFM(t, fb, testFabric, path)
	waitFor(t, "the new FM to know host-c's MAC", 5*time.Second, func() bool {
		return statusMAC(fb.fm, 1, "host-c") == net.HardwareAddr(x[:]).String()
	})
	y := [6]byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}
	fb.c.trapMACChange(0, y)
	waitFor(t, "host-c's base_mac_addr is the new learned MAC", 3*time.Second, func() bool {
		_, vp, _, _, _, _ := fb.c.snapshot()
		return vp[0].VPort.BaseMACAddr == y
	})
	restartFM(t, fb, testFabric, path)
	waitFor(t, "the FM to know host-c's MAC after the second restart", 5*time.Second, func() bool {
		return statusMAC(fb.fm, 1, "host-c") != ""
	})
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got := fb.c.netdevMAC(0); got != y {
			t.Fatalf("host-c's netdev MAC became % x after the FM restart, want % x", got, y)
		}
	}
	if got, want := statusMAC(fb.fm, 1, "host-c"), net.HardwareAddr(y[:]).String(); got != want {
		t.Errorf("the FM reports host-c's MAC as %s, want %s", got, want)
	}
}
