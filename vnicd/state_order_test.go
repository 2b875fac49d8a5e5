package vnicd_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opavnic/opavnic/vnicd"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// The state file names a runtime VNIC or a claim before its TAP is made
// persistent: a vnicd that dies in between leaves an entry whose TAP died
// with it, which the next start drops, never a persistent TAP that no entry
// names. These tests check the order at every SetPersist, start a daemon from
// the state file as it was at that moment with the TAP gone (the crash), and
// fail SetPersist to see the entry undone.

// stateOwners lists the owners a runtime or claims state file names (none
// for a file that is missing or does not parse).
func stateOwners(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var f struct {
		VNICs  []struct{ Owner string } `json:"vnics"`
		Claims []struct{ Owner string } `json:"claims"`
	}
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	var out []string
	for _, e := range append(f.VNICs, f.Claims...) {
		out = append(out, e.Owner)
	}
	return out
}

// persistWatch checks, at each SetPersist(true) of n's devices, that the
// state file at path names every owner of want, and keeps a copy of the
// file as it was then.
type persistWatch struct {
	mu      sync.Mutex
	want    []string
	calls   int
	missing []string
	snap    []byte
}

func watchPersist(n *fakeNode, path string) *persistWatch {
	w := &persistWatch{}
	n.setOnPersist(func(vport uint8, on bool) error {
		if !on {
			return nil
		}
		got := stateOwners(path)
		b, _ := os.ReadFile(path)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.calls++
		w.snap = b
		for _, o := range w.want {
			if !slices.Contains(got, o) {
				w.missing = append(w.missing, fmt.Sprintf("vport %d made persistent while the state file names %q, not %q", vport, got, o))
			}
		}
		return nil
	})
	return w
}

func (w *persistWatch) expect(owners ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = owners
}

// check fails t if a SetPersist came before the state file named its
// entry, or if there were fewer than calls of them.
func (w *persistWatch) check(t *testing.T, calls int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.missing {
		t.Error(m)
	}
	if w.calls < calls {
		t.Errorf("%d SetPersist(true) calls, want at least %d", w.calls, calls)
	}
	w.missing = nil
}

func (w *persistWatch) snapshot() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snap
}

// observe gives n's next start a logger whose entries the test can read.
func observe(n *fakeNode) *observer.ObservedLogs {
	core, logs := observer.New(zap.InfoLevel)
	n.log = zap.New(core)
	return logs
}

// TestRuntimeSavedBeforePersist: vnic_add saves a runtime VNIC before it
// makes its TAP persistent, and a start restoring runtime VNICs keeps the
// last run's entries in the state file until all of them have been tried
// (a save of the ones restored so far would leave the later ones' persistent
// TAPs named by no entry if vnicd died then).
func TestRuntimeSavedBeforePersist(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	path := vnicd.RuntimePathOf(n.sock)
	w := watchPersist(n, path)
	w.expect("a")
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", IfName: "rt1", Owner: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	w.expect("a", "b")
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 2, PKey: "0x8002", IfName: "rt2", Owner: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	w.check(t, 2)
	n.halt()
	n.start()
	if got := owners(n.vnics()); !slices.Equal(got, []string{"", "a", "b"}) {
		t.Fatalf("VNICs after the restart: %q", got)
	}
	w.check(t, 4)
	if got := stateOwners(path); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("state file after the restart names %q", got)
	}
}

// TestRuntimeCrashBeforePersist: vnicd dies after saving a new runtime VNIC
// and before making its TAP persistent, so the TAP dies with it. The next
// start cannot take the TAP over, drops the entry with a log line that says
// why, and does not make the VNIC again.
func TestRuntimeCrashBeforePersist(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	path := vnicd.RuntimePathOf(n.sock)
	w := watchPersist(n, path)
	w.expect("crash")
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 4, PKey: "0x8004", IfName: "rt4", Owner: "crash"}, nil); err != nil {
		t.Fatal(err)
	}
	w.check(t, 1)
	n.setOnPersist(nil)
	n.halt()
	if err := os.WriteFile(path, w.snapshot(), 0o600); err != nil { // the file as the crash left it
		t.Fatal(err)
	}
	n.setAttachOK(false) // the TAP was not persistent: it went with the process
	logs := observe(n)
	n.start()
	if got := owners(n.vnics()); !slices.Equal(got, []string{""}) {
		t.Errorf("VNICs after the crash: %q", got)
	}
	drops := logs.FilterMessageSnippet("runtime VNIC of the last run dropped: its TAP cannot be taken over").
		FilterField(zap.Uint8("vnic", 1)).FilterField(zap.String("owner", "crash")).All()
	if len(drops) != 1 || drops[0].Level != zap.WarnLevel || !strings.Contains(drops[0].Message, "before making it persistent") {
		t.Errorf("log lines of the dropped VNIC: %+v", drops)
	}
	if got := stateOwners(path); len(got) != 0 {
		t.Errorf("state file after the start names %q", got)
	}
	if att, _ := n.record(); len(att) != 1 || att[0].Netdev.IfName != "rt4" || att[0].Attach != "opavnic:s:vport1" {
		t.Errorf("attach requests %+v", att)
	}
	// The name is free for a new VNIC.
	n.setAttachOK(true)
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 4, PKey: "0x8004", IfName: "rt4", Owner: "again"}, nil); err != nil {
		t.Error(err)
	}
}

// TestRuntimePersistFails: when the TAP cannot be made persistent, vnic_add
// fails, the VNIC is removed and the state file no longer names it.
func TestRuntimePersistFails(t *testing.T) {
	n := newFakeNodeConfig(t, fakeStaticTwoGroups)
	path := vnicd.RuntimePathOf(n.sock)
	refused := errors.New("persist refused")
	var saw atomic.Bool
	n.setOnPersist(func(_ uint8, on bool) error {
		if !on {
			return nil
		}
		saw.Store(slices.Contains(stateOwners(path), "x"))
		return refused
	})
	err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", Owner: "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "persist refused") {
		t.Fatalf("vnic_add: %v", err)
	}
	n.setOnPersist(nil)
	if !saw.Load() {
		t.Error("the state file did not name the VNIC when its TAP was being made persistent")
	}
	if got := owners(n.vnics()); !slices.Equal(got, []string{""}) {
		t.Errorf("VNICs after the failed add: %q", got)
	}
	if got := stateOwners(path); len(got) != 0 {
		t.Errorf("state file after the failed add names %q", got)
	}
	n.halt()
	n.start()
	if att, _ := n.record(); len(att) != 0 {
		t.Errorf("attach requests at the next start: %+v", att)
	}
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, PKey: "0x8001", Owner: "x"}, nil); err != nil {
		t.Errorf("vnic_add again: %v", err)
	}
}

// TestClaimCrashBeforePersist: a claim is saved before its TAP is made
// persistent; vnicd dies in between, so the TAP dies with it. The next start
// reads the claim back as pending; when the EM makes the port, the take-over
// fails, the claim ends with a log line that says why, and the port is made
// afresh in vnicd's namespace.
func TestClaimCrashBeforePersist(t *testing.T) {
	n := newFakeNode(t)
	n.emSet(0, 1)
	c1 := nsFile(t, "c1")
	path := vnicd.ClaimsPath(n.sock)
	w := watchPersist(n, path)
	w.expect("crash")
	if err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, NetNS: c1, IfName: "eth0", Owner: "crash"}, nil); err != nil {
		t.Fatal(err)
	}
	w.check(t, 1)
	n.setOnPersist(nil)
	n.halt()
	if err := os.WriteFile(path, w.snapshot(), 0o600); err != nil {
		t.Fatal(err)
	}
	n.setAttachOK(false)
	logs := observe(n)
	n.start()
	if cs := n.claims(); len(cs) != 1 || cs[0].Owner != "crash" || cs[0].State != ctl.ClaimPending {
		t.Fatalf("claims after the crash: %+v", cs)
	}
	n.emSet(0, 1)
	if cs := n.claims(); len(cs) != 0 {
		t.Errorf("claims once the EM made the port: %+v", cs)
	}
	ends := logs.FilterMessageSnippet("claim ended: cannot take the claimed netdev over").
		FilterField(zap.Uint8("vnic", 0)).FilterField(zap.String("owner", "crash")).All()
	if len(ends) != 1 || ends[0].Level != zap.WarnLevel || !strings.Contains(ends[0].Message, "before making it persistent") {
		t.Errorf("log lines of the ended claim: %+v", ends)
	}
	if d := n.dev(0); d == nil || d.NetNS() != "" || d.Name() != "vnic0" {
		t.Errorf("port after the failed take-over: %+v", d)
	}
	if got := stateOwners(path); len(got) != 0 {
		t.Errorf("claims file names %q", got)
	}
}

// TestClaimPersistFails: when the claimed TAP cannot be made persistent, the
// claim fails, the netdev goes back home, and the claims file no longer
// names it.
func TestClaimPersistFails(t *testing.T) {
	n := newFakeNode(t)
	n.emSet(0, 1)
	c1 := nsFile(t, "c1")
	path := vnicd.ClaimsPath(n.sock)
	var saw atomic.Bool
	n.setOnPersist(func(_ uint8, on bool) error {
		if !on {
			return nil
		}
		saw.Store(slices.Contains(stateOwners(path), "x"))
		return errors.New("persist refused")
	})
	err := ctl.Call(n.sock, ctl.CmdVNICAdd, ctl.VNICAddArgs{VESW: 1, NetNS: c1, IfName: "eth0", Owner: "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "persist refused") {
		t.Fatalf("vnic_add: %v", err)
	}
	n.setOnPersist(nil)
	if !saw.Load() {
		t.Error("the claims file did not name the claim when its TAP was being made persistent")
	}
	if cs := n.claims(); len(cs) != 0 {
		t.Errorf("claims after the failed claim: %+v", cs)
	}
	if got := stateOwners(path); len(got) != 0 {
		t.Errorf("claims file names %q", got)
	}
	if d := n.dev(0); d.NetNS() != "" || d.Name() != "vnic0" {
		t.Errorf("netdev after the failed claim: %s in %q", d.Name(), d.NetNS())
	}
	if on, _ := n.dev(0).Persistent(); on {
		t.Error("netdev of the failed claim is persistent")
	}
}
