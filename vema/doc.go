// Package vema is the management-datagram (MAD) wire format of the fabric:
// the codecs the VEMA agent, the Ethernet Manager, the Subnet Manager and the
// Subnet Administrator exchange, laid out byte for byte as the Linux
// opa_vnic, hfi1 and ib_core structures.
//
// What it covers (docs/linux-compat.md):
//
//   - §4.2, §9.2: the 24-byte common MAD header (MADHeader), the 12-byte RMPP
//     header, the 40-byte vendor header with the Intel OUI (VendorHeader),
//     a VEMA MAD (MAD: vendor header + 2008-byte data area, 2048 bytes) and
//     a VEMA trap MAD (TrapMAD, 272 bytes); classes, methods, statuses,
//     attribute IDs and sizes as constants.
//   - §4.5-§4.9: every VEMA attribute: ClassPortInfo (80 bytes, shared with
//     the SA), VESWInfo (152), PerVESWPortInfo (128), VESWPortInfo (280),
//     VESWPortMACEntries, IfaceMACs, SummaryCounters (360), ErrorCounters
//     (304), and the VEMA Notice (96) carrying a VESWPortTrap (16).
//   - §9.3, §9.6, §9.7, §11.2: the SMP subset a fabric manager needs: SMP
//     (LID-routed 32-byte and directed-route 176-byte headers), NodeInfo (44),
//     NodeDescription (64), PortInfo (242, every field at its offset) and the
//     SMA notice (SMPNotice, 96).
//   - §10.1-§10.5: the SA MAD (56-byte header + data), the OPA PathRecord
//     (32-bit LIDs) and the IB PathRecord (16-bit LIDs), and the ClassPortInfo
//     cap_mask2 bit that announces OPA path records.
//   - docs/management.md §3: the directory class, the emulation's own
//     (DirectoryBlock, MulticastBlock).
//   - docs/management.md §8.2: the switch attributes (opa-ff
//     stl_sm_types.h): SwitchInfo (84), LinearForwardingTable blocks
//     (LFTBlock, 64 ports), MulticastForwardingTable blocks (MFTBlock, 8 port
//     masks), PortStateInfo (8 per port) and Aggregate segments
//     (AggregateHeader, AggregateSegment, SplitAggregate); the attribute
//     modifiers of all SMP attributes in one place (PortsAttrMod, LFTAttrMod,
//     MFTAttrMod, AggregateAttrMod, PortInfoAttrMod) and the LID-to-entry
//     helpers (LFTIndex, MFTIndex, MFTPortBit).
//   - docs/management.md §8.1: the directed-route hop rules of linux smi.c as
//     pure functions of an SMP and the node running them (SMP.DRRecv,
//     SMP.DRSend, DRNode, DRAction, DRDropReason), the request layout
//     (SMP.SetDirectedRoute) and the SMA's answer (SMP.Reply).
//
// What it does not do: no I/O, no 16B framing (package encap), no agent or
// manager behaviour (who answers what, with which status, when to trap: the
// node's agents are package vema/node, the manager package vema/fm). The hop
// rules decide what a node does with a DR SMP but send nothing, and know no
// port states. The few helpers beyond layout name what a field value means in
// the kernel (the MAC-table request rule, the DLID bits of a MAC entry, the
// power-on VESWPortInfo), so the agent and the manager read the same
// definition.
//
// Conventions. Every type is a plain struct with value fields (6-byte MACs as
// [6]byte, fixed arrays, encap.LID, encap.GID, encap.PKey, encap.VESWID) and
// the codec methods AppendBinary (the primitive), MarshalBinary and
// UnmarshalBinary. All multi-byte fields are big-endian. Reserved fields are
// kept in the structs as byte arrays (or as the raw bits of a bit field), so
// a decoded value encodes back to the same bytes: the VEMA stores reserved
// bytes on Set and echoes them on Get, and so can the agent. Bit fields that
// share a byte with other fields are checked on encode: a value that does not
// fit its bits is ErrRange, never silently masked.
//
// Decoding. UnmarshalBinary of a fixed-size attribute reads its first N bytes
// and ignores the rest, because an attribute sits at the start of a zero-filled
// MAD data area; the variable-length ones (VESWPortMACEntries, IfaceMACs) read
// the entries their header announces. SMP and SAMAD take the whole datagram as
// data after the header. Input shorter than needed is an error wrapping
// io.ErrUnexpectedEOF (and ErrShort); on any error the receiver is unchanged.
// AppendBinary appends exactly the encoded size, so an attribute can be written
// in place into a data area: attr.AppendBinary(mad.Data[:0]).
//
// Sentinel errors start with "vema: " and are compared with errors.Is.
package vema
