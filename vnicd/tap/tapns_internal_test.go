//go:build linux

package tap

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// delNSIDMsg is an RTM_DELNSID as the kernel sends it (rtnl_net_fill):
//
//	struct rtgenmsg   family AF_UNSPEC, padded to 4 bytes
//	NETNSA_NSID       len 8, type 1, s32 nsid
func delNSIDMsg(nsid int32) []byte {
	b := make([]byte, 12)
	binary.NativeEndian.PutUint16(b[4:], 8)
	binary.NativeEndian.PutUint16(b[6:], unix.NETNSA_NSID)
	binary.NativeEndian.PutUint32(b[8:], uint32(nsid))
	return b
}

// newLinkMsg is an RTM_NEWLINK of ifindex 7, up, named "x0", MTU 1400:
//
//	struct ifinfomsg  family 0, type 1 (ARPHRD_ETHER), index 7, flags IFF_UP
//	IFLA_IFNAME       len 7 (padded to 8), "x0\0"
//	IFLA_MTU          len 8, u32 1400
func newLinkMsg() []byte {
	b := make([]byte, unix.SizeofIfInfomsg, 32)
	binary.NativeEndian.PutUint16(b[2:], 1)
	binary.NativeEndian.PutUint32(b[4:], 7)
	binary.NativeEndian.PutUint32(b[8:], unix.IFF_UP)
	b = append(b, 7, 0, unix.IFLA_IFNAME, 0, 'x', '0', 0, 0)
	b = append(b, 8, 0, unix.IFLA_MTU, 0, 0, 0, 0, 0)
	binary.NativeEndian.PutUint32(b[len(b)-4:], 1400)
	return b
}

func TestParseLinkMsg(t *testing.T) {
	msg := func(typ uint16, data []byte) syscall.NetlinkMessage {
		return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Len: uint32(syscall.NLMSG_HDRLEN + len(data))}, Data: data}
	}
	tests := []struct {
		name     string
		m        syscall.NetlinkMessage
		nsid     int
		ok, gone bool
		wantNSID int
	}{
		{"DELNSID 5", msg(unix.RTM_DELNSID, delNSIDMsg(5)), ownNSID, true, true, 5},
		{"DELNSID short", msg(unix.RTM_DELNSID, []byte{0, 0}), ownNSID, false, false, 0},
		{"DELNSID without NSID", msg(unix.RTM_DELNSID, make([]byte, 4)), ownNSID, false, false, 0},
		{"NEWLINK from nsid 3", msg(unix.RTM_NEWLINK, newLinkMsg()), 3, true, false, 3},
		{"NEWLINK short", msg(unix.RTM_NEWLINK, make([]byte, 8)), 3, false, false, 0},
		{"NEWNSID", msg(unix.RTM_NEWNSID, delNSIDMsg(5)), ownNSID, false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lm, ok := parseLinkMsg(tc.m, tc.nsid)
			if ok != tc.ok || lm.nsGone != tc.gone || (ok && lm.nsid != tc.wantNSID) {
				t.Fatalf("parseLinkMsg = %+v, %v; want ok %v, gone %v, nsid %d", lm, ok, tc.ok, tc.gone, tc.wantNSID)
			}
			if ok && !tc.gone {
				a := lm.upd.Link.Attrs()
				if lm.upd.Index != 7 || a.Name != "x0" || a.MTU != 1400 || lm.upd.Flags&unix.IFF_UP == 0 {
					t.Errorf("link %+v, ifinfomsg %+v", a, lm.upd.IfInfomsg)
				}
			}
		})
	}
}

// FuzzParseLinkMsg: whatever a datagram holds, parsing it is an answer,
// never a panic.
func FuzzParseLinkMsg(f *testing.F) {
	f.Add(uint16(unix.RTM_DELNSID), delNSIDMsg(5))
	f.Add(uint16(unix.RTM_NEWLINK), newLinkMsg())
	f.Add(uint16(unix.RTM_DELLINK), newLinkMsg()[:unix.SizeofIfInfomsg])
	f.Fuzz(func(t *testing.T, typ uint16, data []byte) {
		parseLinkMsg(syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Len: uint32(syscall.NLMSG_HDRLEN + len(data))}, Data: data}, 0)
	})
}
