package tap

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// crc32LE is the kernel's crc32_le written out bit by bit (lib/crc32.c,
// reflected polynomial 0xEDB88320, no inversion of its own): the reference
// MACListDigest is checked against.
func crc32LE(crc uint32, p []byte) uint32 {
	for _, b := range p {
		crc ^= uint32(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xEDB88320
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

func TestIfaceMACsDigestIsTheKernels(t *testing.T) {
	lists := [][][6]byte{
		nil,
		{{0x33, 0x33, 0, 0, 0, 1}},
		{{0x33, 0x33, 0, 0, 0, 1}, {0x01, 0x00, 0x5e, 0, 0, 1}, {0x33, 0x33, 0xff, 0x12, 0x34, 0x56}},
	}
	seen := map[uint32]bool{}
	for _, l := range lists {
		crc := uint32(0)
		for _, m := range l {
			crc = crc32LE(crc, m[:])
		}
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(6*len(l)))
		want := ^crc32LE(crc, n[:])
		if got := MACListDigest(l); got != want {
			t.Errorf("digest of %x: %#08x, want the kernel's %#08x", l, got, want)
		}
		seen[want] = true
	}
	if len(seen) != len(lists) {
		t.Error("different lists have the same digest")
	}
	// Order matters, as in the kernel: the list is hashed as it stands.
	a := [][6]byte{{1, 0, 0x5e, 0, 0, 1}, {0x33, 0x33, 0, 0, 0, 1}}
	if MACListDigest(a) == MACListDigest([][6]byte{a[1], a[0]}) {
		t.Error("the digest ignores the order")
	}
}

func TestParseDevMcast(t *testing.T) {
	// As the kernel prints it (dev_mc_seq_show in net/core/net-procfs.c:
	// "%-4d %-15s %-5d %-5d %*phN\n", the address as addr_len bytes in hex).
	text := strings.Join([]string{
		"1    lo              1     0     01005e000001",
		"1    lo              1     0     333300000001",
		"7    vnic0           1     0     333300000001",
		"7    vnic0           1     0     01005e000001",
		"7    vnic0           2     0     3333ff0a0b0c",
		"9    ib0             1     0     00ffffffff12401bffff0000000000000001",
		"12   vnic1           1     1     01005e7f0001",
		"",
	}, "\n")
	got, err := parseDevMcast([]byte(text), 7)
	want := [][6]byte{{0x33, 0x33, 0, 0, 0, 1}, {0x01, 0, 0x5e, 0, 0, 1}, {0x33, 0x33, 0xff, 0x0a, 0x0b, 0x0c}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("vnic0: %x, %v; want %x", got, err, want)
	}
	if got, err := parseDevMcast([]byte(text), 9); err != nil || len(got) != 0 {
		t.Fatalf("a 20-byte address is not an Ethernet one: %x, %v", got, err)
	}
	if got, err := parseDevMcast([]byte(text), 3); err != nil || got != nil {
		t.Fatalf("a netdev with no entry: %x, %v", got, err)
	}
	for _, bad := range []string{
		"7    vnic0           1     0",
		"x    vnic0           1     0     333300000001",
		"7    vnic0           1     0     33330000000g",
	} {
		if _, err := parseDevMcast([]byte(bad), 7); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
