// Package encap is the Omni-Path 16B wire format and nothing else: LIDs and
// GIDs, the 16B header as a view over bytes, VNIC encapsulation and
// decapsulation in place, management (L4 0x08) framing, and the ICRC.
//
// It implements docs/wire.md §1-§7 (the project's contract) and the
// Linux layouts of docs/linux-compat.md §1 (16B header, LEN, pad, tail), §2
// (entropy fold, default-port flow table, DLID from a MAC, SC and RC choice),
// §7 (32-bit and 24-bit LIDs, extended LIDs, special GIDs) and §12.1
// (management framing).
//
// It does no I/O and no logging, and nothing on the per-packet path allocates:
// EncapVNIC writes the header into headroom the caller keeps before the frame
// and the trailer after it; Parse, VNICFrame and DecapVNIC return sub-slices of
// the packet. Errors are the package's sentinels (ErrShort, ErrLength, ErrL2,
// ErrICRC, ErrL4, ErrTail, ...), compared with errors.Is.
package encap
