package fm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opavnic/opavnic/vema"
)

// withoutC is testFabric without host-c's red port.
var withoutC = strings.Replace(testFabric, "      - {node: host-c, vport: 0}\n", "", 1)

// A member removed from the config while the FM was down (the config
// edited, then the FM restarted rather than reloaded) is deleted from its
// node as a reload would delete it: the MAC file says the FM configured it.
func TestFMRestartDeletesMemberRemovedWhileDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabricFile(t, path)
	waitTable(t, fb.c, "host-c configured", 0)
	waitMACFile(t, path, memberKey{1, "host-c", 0}, [6]byte{})
	restartFM(t, fb, withoutC, path)
	waitPorts(t, fb.c, "host-c's red port deleted after the FM restart", 0)
	// The other nodes' ports stay.
	waitPorts(t, fb.b, "host-b's ports", 2)
}

// A DeleteVESW owed to a node that was down at the reload is still owed by
// the FM after a restart: the node gets it when it is back.
func TestFMRestartKeepsOwedDeleteVESW(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fm0.macs.json")
	fb := newFabricFile(t, path)
	waitTable(t, fb.c, "host-c configured", 0)
	fb.c.setDrop(func(vema.Class, vema.Method, uint16) bool { return true })
	waitFor(t, "host-c lost", 5*time.Second, func() bool {
		n, _ := fb.fm.Node("host-c")
		return n.State != NodeActive
	})
	if err := fb.fm.Reload(mustConfig(t, withoutC)); err != nil {
		t.Fatal(err)
	}
	restartFM(t, fb, withoutC, path)
	fb.c.setDrop(nil)
	waitFor(t, "host-c back", 5*time.Second, func() bool {
		n, _ := fb.fm.Node("host-c")
		return n.State == NodeActive
	})
	waitPorts(t, fb.c, "host-c's red port deleted once it is back", 0)
	// The DeleteVESW answered, the file owes nothing any more: another
	// restart sends none.
	waitFor(t, "the MAC file to owe no DeleteVESW", 3*time.Second, func() bool {
		fb.fm.mu.Lock()
		defer fb.fm.mu.Unlock()
		b, err := os.ReadFile(path)
		return err == nil && len(fb.fm.owed) == 0 && !strings.Contains(string(b), `"deletes"`)
	})
}

// A reload that removes a member of a node the FM has not seen since it
// started owes that node the DeleteVESW, by name: the node still carries
// the port the last FM run made.
func TestReloadDeletesMemberOfNodeNotSeenSinceStart(t *testing.T) {
	fb := newFabric(t)
	waitTable(t, fb.c, "host-c configured", 0)
	fb.c.setDrop(func(vema.Class, vema.Method, uint16) bool { return true })
	restartFM(t, fb, testFabric, "")
	fb.waitActive(t, 2)
	if err := fb.fm.Reload(mustConfig(t, withoutC)); err != nil {
		t.Fatal(err)
	}
	fb.c.setDrop(nil)
	waitPorts(t, fb.c, "host-c's red port deleted once it is back", 0)
}
