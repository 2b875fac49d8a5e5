package tap

import "encoding/binary"

// Receive coalescing (userspace GRO) into the TAP: the frames of one receive
// batch for one port are written in order, but a run of consecutive TCP
// segments of one flow is written as one super-frame with a virtio_net_hdr
// saying GSO_TCPV4/TCPV6, gso_size = the segments' payload length and
// NEEDS_CSUM, so the kernel runs its TCP receive path once for the run
// instead of once per frame. The rules are those of the kernel's
// tcp_gro_receive and wireguard-go's tun/offload_linux.go, restricted to
// neighbours in the batch (a frame of another flow ends a run), so that the
// order of frames in the batch is kept exactly:
//
//   - Ethernet (with up to two VLAN tags) then IPv4 without options and not a
//     fragment, or IPv6 whose next header is TCP (no extension headers); the
//     frame ends where the IP length says (an Ethernet-padded frame is never
//     coalesced);
//   - the Ethernet header and tags, and the IP header but for the length, ID
//     and checksum, byte-equal to the run's first frame; IPv4 IDs incrementing
//     unless DF is set (the kernel's rule);
//   - TCP flags ACK or ACK|PSH only; the TCP header byte-equal to the first
//     frame's but for the sequence number, PSH and the checksum (so the same
//     ports, ACK number, window and options, timestamps included); sequence
//     numbers contiguous;
//   - every payload the first frame's length but the last, which may be
//     shorter; a segment with PSH or a shorter payload ends the run; at most
//     64 KB of IP packet;
//   - every segment's IPv4 header checksum and TCP checksum verify (a
//     coalesced frame's checksum is recomputed by whoever needs it, which
//     would hide a corrupt segment). A segment that fails any rule is written
//     on its own, untouched, for the kernel to judge.
//
// A run of consecutive UDP datagrams of one flow is written the same way,
// as one super-frame saying GSO_UDP_L4 (USO, kernels from 6.2), which the
// kernel cuts again for a socket without UDP_GRO, or passes whole to one with
// it. The rules are those of the kernel's udp_gro_receive_segment, and such
// that the kernel's cutting gives back the very datagrams that came:
//
//   - Ethernet (with up to two VLAN tags) then IPv4 without options and not a
//     fragment, or IPv6 whose next header is UDP (no extension headers); the
//     frame ends where the IP length says, and the UDP length agrees;
//   - the Ethernet header and tags, the IP header but for the length, ID and
//     checksum, and the UDP ports byte-equal to the run's first datagram's;
//     IPv4 IDs incrementing by one (the kernel numbers the datagrams it cuts
//     that way);
//   - every payload the first datagram's length but the last, which may be
//     shorter and ends the run; no empty datagram; at most 64 datagrams (the
//     kernel's UDP_MAX_SEGMENTS, which older kernels have at 64) and 64 KB of
//     IP packet;
//   - every datagram has a UDP checksum (an IPv4 zero, "none", ends the run:
//     cutting would compute one) and it and the IPv4 header checksum verify.
//
// A kernel that refuses a UDP super-frame (before 6.2) turns UDP coalescing
// off for the TAP; TCP coalescing goes on.
//
// Everything else (ARP, ICMP, a lone segment or datagram) is written as it
// came.

// groMaxHdr is the longest header run a coalesced frame can have: the
// virtio_net_hdr, Ethernet with two tags, a plain IPv6 header, TCP with 40
// bytes of options.
const groMaxHdr = vnetHdrLen + 22 + 40 + 60

// groMaxIP is the longest IP packet (IPv4 total length, IPv6 payload length
// plus 40) a coalesced frame may carry.
const groMaxIP = 65535

// groMaxUDP is the most datagrams one UDP super-frame may carry.
const groMaxUDP = 64

const (
	tcpFlagACK = 0x10
	ipv4DF     = 0x40
)

// tcpSeg is a parsed TCP segment that may be coalesced.
type tcpSeg struct {
	l3, l4, hdrLen int
	v6             bool
	seq            uint32
	flags          byte
}

// groIP finds the IP header of a frame that may be coalesced: after
// Ethernet and up to two VLAN tags, IPv4 without options and not a fragment,
// or IPv6, carrying proto, the frame ending where the IP length says. It
// returns the IP and transport header offsets.
func groIP(frame []byte, proto byte) (l3, l4 int, v6, ok bool) {
	l3, et := l3Offset(frame)
	switch et {
	case etherTypeIPv4:
		l4 = l3 + 20
		ok = l4 <= len(frame) && frame[l3] == 0x45 && frame[l3+9] == proto &&
			binary.BigEndian.Uint16(frame[l3+6:])&0x3fff == 0 &&
			l3+int(binary.BigEndian.Uint16(frame[l3+2:])) == len(frame)
	case etherTypeIPv6:
		l4, v6 = l3+40, true
		ok = l4 <= len(frame) && frame[l3]>>4 == 6 && frame[l3+6] == proto &&
			l4+int(binary.BigEndian.Uint16(frame[l3+4:])) == len(frame)
	}
	return l3, l4, v6, ok
}

// parse reports whether frame is a TCP segment that qualifies for
// coalescing on its own (see the rules above), without its checksum.
func (s *tcpSeg) parse(frame []byte) bool {
	l3, l4, v6, ok := groIP(frame, ipProtoTCP)
	if !ok || l4+20 > len(frame) {
		return false
	}
	s.v6 = v6
	hdrLen := l4 + int(frame[l4+12]>>4)*4
	fl := frame[l4+13]
	if hdrLen < l4+20 || hdrLen > len(frame) || hdrLen+vnetHdrLen > groMaxHdr ||
		fl&^tcpFlagPSH != tcpFlagACK {
		return false
	}
	s.l3, s.l4, s.hdrLen, s.flags = l3, l4, hdrLen, fl
	s.seq = binary.BigEndian.Uint32(frame[l4+4:])
	return true
}

// csumValid checks the segment's IPv4 header checksum and TCP checksum.
func (s *tcpSeg) csumValid(frame []byte) bool {
	return groCsumValid(frame, s.l3, s.l4, s.v6, ipProtoTCP)
}

// groCsumValid checks a frame's IPv4 header checksum and its TCP or UDP
// (proto) checksum. groIP has made sure an IPv4 header has no options.
func groCsumValid(frame []byte, l3, l4 int, v6 bool, proto byte) bool {
	if !v6 && !ipv4HdrValid(frame[l3:l4]) {
		return false
	}
	return fold(csumAdd(pseudoSum(frame, l3, l4, v6, proto), frame[l4:])) == 0xffff
}

// sameIP reports whether frame f and a run's first frame head have the same
// Ethernet header and tags (l3 bytes) and the same IP header (l3 to l4) but
// for the lengths, the IPv4 ID and header checksum. The ranges have fixed
// lengths (groIP: l3 is 14, 18 or 22; no IPv4 options, no IPv6 extension
// headers), compared a word at a time rather than through bytes.Equal.
func sameIP(f, head []byte, l3, l4 int, v6 bool) bool {
	le := binary.LittleEndian
	f, head = f[:l4], head[:l4]
	// Ethernet and tags: two or three 8-byte words, the last overlapping.
	if le.Uint64(f) != le.Uint64(head) || le.Uint64(f[l3-8:]) != le.Uint64(head[l3-8:]) ||
		l3 > 16 && le.Uint64(f[8:]) != le.Uint64(head[8:]) {
		return false
	}
	h, g := f[l3:], head[l3:]
	if v6 {
		// Version, traffic class, flow label; next header, hop limit, addresses.
		return le.Uint32(h) == le.Uint32(g) && le.Uint16(h[6:]) == le.Uint16(g[6:]) &&
			le.Uint64(h[8:]) == le.Uint64(g[8:]) && le.Uint64(h[16:]) == le.Uint64(g[16:]) &&
			le.Uint64(h[24:]) == le.Uint64(g[24:]) && le.Uint64(h[32:]) == le.Uint64(g[32:])
	}
	// Version/IHL, TOS; flags/fragment, TTL, protocol; addresses.
	return le.Uint16(h) == le.Uint16(g) && le.Uint32(h[6:]) == le.Uint32(g[6:]) &&
		le.Uint64(h[12:]) == le.Uint64(g[12:])
}

// nextID reports whether IPv4 frame f's ID is head's plus k.
func nextID(f, head []byte, l3, k int) bool {
	return binary.BigEndian.Uint16(f[l3+4:]) == binary.BigEndian.Uint16(head[l3+4:])+uint16(k)
}

// follows reports whether f (parsed as s) may follow the run whose first frame
// is head (parsed as h) as its k-th segment.
func (s *tcpSeg) follows(f []byte, h *tcpSeg, head []byte, k int) bool {
	l3, l4 := s.l3, s.l4
	if s.v6 != h.v6 || s.hdrLen != h.hdrLen || s.l3 != h.l3 || s.l4 != h.l4 || !sameIP(f, head, l3, l4, s.v6) ||
		!s.v6 && f[l3+6]&ipv4DF == 0 && !nextID(f, head, l3, k) {
		return false
	}
	// Ports; ACK number, data offset; window; urgent pointer and options
	// (a multiple of 4 bytes, hdrLen equal).
	le := binary.LittleEndian
	t, g := f[l4:s.hdrLen], head[l4:s.hdrLen]
	if le.Uint32(t) != le.Uint32(g) || le.Uint32(t[8:]) != le.Uint32(g[8:]) || t[12] != g[12] ||
		le.Uint16(t[14:]) != le.Uint16(g[14:]) || le.Uint16(t[18:]) != le.Uint16(g[18:]) {
		return false
	}
	for i := 20; i < len(t); i += 4 {
		if le.Uint32(t[i:]) != le.Uint32(g[i:]) {
			return false
		}
	}
	return true
}

// groRun finds the run that starts at frames[0][offset:]: it returns how
// many frames the run has (at least 1) and, when more than one, writes the
// coalesced frame's virtio_net_hdr and headers into hdr and returns their
// length. The frames' own bytes are never changed: a coalesced frame is hdr
// followed by each frame's payload (frames[i][offset+hdrLen-vnetHdrLen:]).
// udp allows runs of UDP datagrams.
func groRun(frames [][]byte, offset int, hdr *[groMaxHdr]byte, udp bool) (n, hlen int) {
	head := frames[0][offset:]
	var h tcpSeg
	if len(frames) < 2 {
		return 1, 0
	}
	if !h.parse(head) {
		if udp {
			return udpRun(frames, offset, hdr)
		}
		return 1, 0
	}
	if h.flags&tcpFlagPSH != 0 {
		return 1, 0
	}
	mss := len(head) - h.hdrLen
	if mss == 0 {
		return 1, 0
	}
	ipLen := len(head) - h.l3
	seq := h.seq + uint32(mss)
	last := h.flags
	n = 1
	for n < len(frames) {
		f := frames[n][offset:]
		var s tcpSeg
		if !s.parse(f) {
			break
		}
		pl := len(f) - s.hdrLen
		if pl == 0 || pl > mss || s.seq != seq || ipLen+pl > groMaxIP || !s.follows(f, &h, head, n) {
			break
		}
		if n == 1 && !h.csumValid(head) {
			return 1, 0
		}
		if !s.csumValid(f) {
			break
		}
		n++
		ipLen += pl
		seq += uint32(pl)
		last = s.flags
		if s.flags&tcpFlagPSH != 0 || pl < mss {
			break
		}
	}
	if n == 1 {
		return 1, 0
	}

	// The coalesced frame's headers (superHeaders), with PSH from the last segment.
	gso := uint8(vnetGSOTCPv4)
	if h.v6 {
		gso = vnetGSOTCPv6
	}
	b := superHeaders(hdr, head, h.l3, h.l4, h.hdrLen, h.v6, ipLen, gso, ipProtoTCP, 16, mss)
	b[h.l4+13] = last
	return n, vnetHdrLen + h.hdrLen
}

// superHeaders writes a coalesced frame's virtio_net_hdr (NEEDS_CSUM, gso
// type gso, gsoSize) and headers into hdr, and returns the headers: the run's
// first frame's hdrLen bytes, with the IP length of the whole run, ipLen, a
// new IPv4 header checksum and, as the kernel leaves it for CHECKSUM_PARTIAL,
// the pseudo-header sum (proto, the whole transport length) in the checksum
// field at l4+csumOff.
func superHeaders(hdr *[groMaxHdr]byte, head []byte, l3, l4, hdrLen int, v6 bool, ipLen int,
	gso uint8, proto byte, csumOff, gsoSize int) []byte {
	b := hdr[vnetHdrLen : vnetHdrLen+hdrLen]
	copy(b, head[:hdrLen])
	setIPLen(b, l3, l4, v6, ipLen)
	binary.BigEndian.PutUint16(b[l4+csumOff:], fold(pseudoSumLen(b, l3, v6, proto, l3+ipLen-l4)))
	v := hdr[:vnetHdrLen]
	v[0], v[1] = vnetFNeedsCsum, gso
	binary.LittleEndian.PutUint16(v[2:], uint16(hdrLen))
	binary.LittleEndian.PutUint16(v[4:], uint16(gsoSize))
	binary.LittleEndian.PutUint16(v[6:], uint16(l4))
	binary.LittleEndian.PutUint16(v[8:], uint16(csumOff))
	return b
}

// udpDgram is a parsed UDP datagram that may be coalesced.
type udpDgram struct {
	l3, l4 int
	v6     bool
}

// parse reports whether frame is a UDP datagram that qualifies for
// coalescing on its own (see the rules above), without its checksums.
func (d *udpDgram) parse(frame []byte) bool {
	l3, l4, v6, ok := groIP(frame, ipProtoUDP)
	if !ok || l4+8 >= len(frame) || int(binary.BigEndian.Uint16(frame[l4+4:])) != len(frame)-l4 ||
		binary.BigEndian.Uint16(frame[l4+6:]) == 0 {
		return false
	}
	d.l3, d.l4, d.v6 = l3, l4, v6
	return true
}

// csumValid checks the datagram's IPv4 header checksum and UDP checksum.
func (d *udpDgram) csumValid(frame []byte) bool {
	return groCsumValid(frame, d.l3, d.l4, d.v6, ipProtoUDP)
}

// follows reports whether f (parsed as d) may follow the run whose first
// datagram is head (parsed as h) as its k-th.
func (d *udpDgram) follows(f []byte, h *udpDgram, head []byte, k int) bool {
	l3, l4 := d.l3, d.l4
	return d.v6 == h.v6 && d.l3 == h.l3 && d.l4 == h.l4 && sameIP(f, head, l3, l4, d.v6) &&
		(d.v6 || nextID(f, head, l3, k)) &&
		binary.LittleEndian.Uint32(f[l4:]) == binary.LittleEndian.Uint32(head[l4:]) // ports
}

// udpRun is groRun for a run of UDP datagrams.
func udpRun(frames [][]byte, offset int, hdr *[groMaxHdr]byte) (n, hlen int) {
	head := frames[0][offset:]
	var h udpDgram
	if !h.parse(head) {
		return 1, 0
	}
	size := len(head) - h.l4 - 8
	ipLen := len(head) - h.l3
	n = 1
	for n < len(frames) && n < groMaxUDP {
		f := frames[n][offset:]
		var d udpDgram
		if !d.parse(f) {
			break
		}
		pl := len(f) - d.l4 - 8
		if pl > size || ipLen+pl > groMaxIP || !d.follows(f, &h, head, n) {
			break
		}
		if n == 1 && !h.csumValid(head) {
			return 1, 0
		}
		if !d.csumValid(f) {
			break
		}
		n++
		ipLen += pl
		if pl < size {
			break
		}
	}
	if n == 1 {
		return 1, 0
	}

	// The super-frame's headers (superHeaders), with the run's UDP length.
	b := superHeaders(hdr, head, h.l3, h.l4, h.l4+8, h.v6, ipLen, vnetGSOUDPL4, ipProtoUDP, 6, size)
	binary.BigEndian.PutUint16(b[h.l4+4:], uint16(h.l3+ipLen-h.l4))
	return n, vnetHdrLen + h.l4 + 8
}
