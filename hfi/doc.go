// Package hfi is the software host fabric interface: one Omni-Path port (its
// LID, state and counters) whose wire is UDP. It sends 16B packets that others
// built to the endpoints its LID directory names (replicating multicast DLIDs
// to every member of the group but the sender), and on receive runs the checks
// of docs/wire.md §7 in order (length, L2, ICRC, source, DLID, L4),
// counts each failure, and hands good packets to the receiver registered for
// their L4 type (0x78 VNIC Ethernet, 0x08 fabric management).
//
// It knows nothing of Ethernet or TAP devices: the hardware-dependent half of
// the kernel's split (hfi1), with vnicd and vema as the hardware-independent
// opa_vnic half. The per-packet path allocates nothing, logs nothing and takes
// no lock: the directory is an immutable value swapped atomically, counters are
// atomic, and each sending goroutine owns its Sender.
package hfi
