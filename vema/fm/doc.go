// Package fm is the opavnic fabric manager as a library: the SM (node
// discovery by announce, LID assignment from fixed LIDs or a pool that may lie
// wholly in the extended range, PortInfo Set, polling), the directory pushes
// that tell every node the LID -> UDP endpoint map and the multicast groups,
// the SA (OPA PathRecord with special GIDs for extended LIDs, ClassPortInfo)
// and the EM (VESWPortInfo, MAC tables, traps, DeleteVESW on reload).
//
// It implements the FM side of docs/management.md (§2 SM, §3 directory, §4 EM,
// §5 SA) over an *hfi.HFI whose source check is relaxed for management
// packets (hfi.Config.TrustAnyMgmtSource). It does not implement a node's
// side (SMA, VEMA agent, directory receiver), switches, multiple FMs or
// failover, M_Keys, or SA queries other than PathRecord and ClassPortInfo.
//
// Embedding: Run(ctx, cfg, log) is the whole FM on a UDP socket; Open and
// (*FM).Run split it so a daemon can serve status (Nodes, VESWs, PathRecord)
// and Reload a config while it runs. cmd/opafm is such a daemon.
package fm
