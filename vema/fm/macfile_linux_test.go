package fm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// created counts the files whose names start with prefix created in the
// directory the inotify instance fd watches (IN_CREATE): statefile.Write
// makes one temporary file, of a name of its own, per write.
func created(t *testing.T, fd int, prefix string) int {
	t.Helper()
	n := 0
	buf := make([]byte, 64<<10)
	for range 1000 {
		k, err := unix.Read(fd, buf)
		if err == unix.EAGAIN || k <= 0 {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			b := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			if strings.HasPrefix(string(b), prefix) {
				n++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	return n
}

// A restarted FM with no MAC file yet (a first run, /run emptied by a
// reboot) writes it a few times in its start-up sweep, not once per member
// it reads: each write encodes every member, so a write per member costs
// time quadratic in the members, spent under the FM's lock (some 10 s of a
// stalled loop for 4000 members).
func TestMACFileStartupWritesBatched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fm0.macs.json")
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(testFabric + "  - id: 3\n    name: green\n    pkey: 0x8003\n    members:\n")
	for _, node := range []string{"host-a", "host-b", "host-c"} {
		for vport := 2; vport < 22; vport++ {
			fmt.Fprintf(&b, "      - {node: %s, vport: %d}\n", node, vport)
		}
	}
	fb := newFabric(t)
	restartFM(t, fb, b.String(), path)
	const members = 5 + 60
	waitFor(t, "the MAC file to list every member", 10*time.Second, func() bool {
		s, ok := readMACFile(path)
		return ok && len(s) == members
	})
	if n := created(t, fd, "fm0.macs.json.tmp"); n > 20 {
		t.Errorf("the MAC file was written %d times for the %d members of the start-up sweep", n, members)
	}
}
