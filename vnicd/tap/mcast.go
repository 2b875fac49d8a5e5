package tap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strconv"
)

// The netdev's multicast list, as the VEMA reports it (IfaceMcastMACs,
// docs/linux-compat.md §4.7) and traps its changes (opcode 2, §4.9). The
// opa_vnic driver heard of every change through ndo_set_rx_mode; a TAP's
// owner hears of none (the kernel sends no netlink event for link-layer
// multicast addresses), so vnicd reads the list again every
// McastPollInterval and a change is seen up to that late.

// devMcastPath is the kernel's list of link-layer multicast addresses of
// the reading thread's namespace (what `ip maddr` shows as "link"):
// thread-self, because /proc/net follows the thread group leader's namespace.
const devMcastPath = "/proc/thread-self/net/dev_mcast"

// parseDevMcast returns the addresses of the netdev at index from the text
// of /proc/net/dev_mcast, in the kernel's order (the netdev's list order):
// lines of "ifindex name users global_users address-in-hex". An address not
// 6 bytes long (not Ethernet) is skipped; a line that cannot be read is an
// error.
func parseDevMcast(text []byte, index int) ([][6]byte, error) {
	var macs [][6]byte
	for n, line := range bytes.Split(text, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("dev_mcast line %d: %d fields, want 5", n+1, len(f))
		}
		i, err := strconv.Atoi(string(f[0]))
		if err != nil {
			return nil, fmt.Errorf("dev_mcast line %d: ifindex: %w", n+1, err)
		}
		if i != index {
			continue
		}
		if len(f[4]) != 12 {
			continue
		}
		var mac [6]byte
		if _, err := hex.Decode(mac[:], f[4]); err != nil {
			return nil, fmt.Errorf("dev_mcast line %d: address: %w", n+1, err)
		}
		macs = append(macs, mac)
	}
	return macs, nil
}

// MACListDigest is the digest the opa_vnic driver compared to decide on a
// MAC-list trap (docs/linux-compat.md §4.9): the kernel's crc32_le, which has
// no inversion of its own, seeded with 0 over each 6-byte address and then
// the list's byte length as a little-endian uint32, inverted. hash/crc32
// inverts before and after, so the seed 0 is ^0 here and the final
// inversion cancels.
func MACListDigest(macs [][6]byte) uint32 {
	crc := ^uint32(0)
	for i := range macs {
		crc = crc32.Update(crc, crc32.IEEETable, macs[i][:])
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(6*len(macs)))
	return crc32.Update(crc, crc32.IEEETable, n[:])
}
