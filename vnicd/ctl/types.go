package ctl

// The commands. Every daemon answers CmdCommands and CmdVersion (Listen
// registers them); vnicd answers the others but CmdReload, opafm CmdFabric,
// CmdVESWs, CmdPath (with other shapes: Client's typed methods are
// vnicd's) and CmdReload.
const (
	CmdCommands = "commands" // the commands the daemon answers: []string
	CmdVersion  = "version"  // the daemon's build: BuildStatus
	CmdVNICs    = "vnics"    // []VNICStatus
	CmdClaims   = "claims"   // managed vnicd: []Claim
	CmdCounters = "counters" // CountersArgs -> []PortCounterSet
	CmdHFI      = "hfi"      // HFIStatus
	CmdFabric   = "fabric"   // vnicd: []FabricEntry
	CmdVESWs    = "vesws"    // vnicd: []VESWStatus
	CmdPath     = "path"     // PathArgs -> vnicd: PathStatus
	CmdVNICAdd  = "vnic_add" // VNICAddArgs -> VNICStatus
	CmdVNICDel  = "vnic_del" // VNICDelArgs -> VNICDeleted
	CmdVNICGC   = "vnic_gc"  // VNICGCArgs -> VNICDeleted
	CmdReload   = "reload"   // opafm: re-read the fabric config
)

// CountersArgs are the arguments of counters: one vport's, or every
// port's when VPort is nil.
type CountersArgs struct {
	VPort *int `json:"vport,omitempty"`
}

// PathArgs are the arguments of path: vnicd takes LID, the destination
// from its own node (a LID or a configured peer's name); opafm takes SLID
// and DLID (LIDs or node names).
type PathArgs struct {
	LID  string `json:"lid,omitempty"`
	SLID string `json:"slid,omitempty"`
	DLID string `json:"dlid,omitempty"`
}

// VNICStatus is one line of `vnicctl vnics`.
type VNICStatus struct {
	VPort       uint8  `json:"vport"`
	IfName      string `json:"ifname"`
	NetNS       string `json:"netns,omitempty"`
	MAC         string `json:"mac"`
	VESW        uint16 `json:"vesw_id"`
	PKey        string `json:"pkey"`
	EthMTU      uint16 `json:"eth_mtu"`
	SLID        string `json:"encap_slid"`
	McastDLID   string `json:"mcast_dlid"`
	ConfigState string `json:"config_state"`
	OperState   string `json:"oper_state"`
	LinkUp      bool   `json:"link_up"`
	// Addresses are those vnicd set on the netdev.
	Addresses []string `json:"addresses,omitempty"`
	// Owner tags a VNIC made by vnic_add (runtime.go).
	Owner string `json:"owner,omitempty"`
}

// PortCounterSet is the counters of one port.
type PortCounterSet struct {
	VPort    uint8     `json:"vport"`
	IfName   string    `json:"ifname"`
	Counters []Counter `json:"counters"`
}

// HFIStatus is the answer to the "hfi" command.
type HFIStatus struct {
	Node       string `json:"node"`
	LID        string `json:"lid"`
	Extended   bool   `json:"extended_lid"`
	State      string `json:"state"`
	Listen     string `json:"listen"`
	VerifyICRC bool   `json:"verify_icrc"`
	BusyPoll   string `json:"busy_poll"` // the window in effect (Engine.BusyPoll)
	// FabricManager is node.fabric_manager (managed mode), and
	// FabricManagerError the last error the kernel reported for datagrams
	// to it, if one came after the FM was last heard from and in the last
	// hfi.PeerErrorQuiet: "connection refused (ICMP port unreachable from
	// 10.0.0.3), ..." when no FM listens there.
	FabricManager      string    `json:"fabric_manager,omitempty"`
	FabricManagerError string    `json:"fabric_manager_error,omitempty"`
	Counters           []Counter `json:"counters"`
}

// FabricEntry is one directory entry.
type FabricEntry struct {
	LID      string `json:"lid"`
	Endpoint string `json:"endpoint,omitempty"`
	// The traffic with a unicast LID other than this port's (hfi.PeerTraffic):
	// 16B packets and their bytes received from it and sent to it, and how
	// long ago the last packet from it came ("4s ago"; "never").
	RxPackets *uint64 `json:"rx_packets,omitempty"`
	RxBytes   *uint64 `json:"rx_bytes,omitempty"`
	TxPackets *uint64 `json:"tx_packets,omitempty"`
	TxBytes   *uint64 `json:"tx_bytes,omitempty"`
	LastRx    string  `json:"last_rx,omitempty"`
	Members   string  `json:"members,omitempty"`
	// Error is the last error the kernel reported for datagrams sent to
	// the endpoint, if one came in the last hfi.PeerErrorQuiet:
	// "connection refused (ICMP port unreachable from 10.0.0.2), 12 times
	// since 40s ago, last 1s ago".
	Error string `json:"error,omitempty"`
}

// VESWStatus is one line of `vnicctl vesws`: the vesw config of a local port.
type VESWStatus struct {
	VPort        uint8    `json:"vport"`
	IfName       string   `json:"ifname"`
	VESWID       uint16   `json:"vesw_id"`
	FabricID     uint16   `json:"fabric_id"`
	PKey         string   `json:"pkey"`
	McastDLID    string   `json:"mcast_dlid"`
	DefaultPorts []string `json:"default_ports"` // "index:dlid"
	RC           string   `json:"rc"`
	EthMTU       uint16   `json:"eth_mtu"`
}

// PathStatus is the answer to the "path" command: an SA PathRecord.
type PathStatus struct {
	SGID     string `json:"sgid"`
	DGID     string `json:"dgid"`
	SLID     string `json:"slid"`
	DLID     string `json:"dlid"`
	HopLimit uint8  `json:"hop_limit"`
	PKey     string `json:"pkey"`
	MTU      uint8  `json:"mtu"`
	Rate     uint8  `json:"rate"`
	SL       uint8  `json:"sl"`
}

// VNICAddArgs are the arguments of vnic_add. Numbers may be JSON numbers or
// strings ("0x8001"); everything but VESW and PKey is optional.
type VNICAddArgs struct {
	VPort       any      `json:"vport,omitempty"` // default: the lowest free vport
	VESW        any      `json:"vesw"`
	PKey        any      `json:"pkey"`
	EthMTU      any      `json:"eth_mtu,omitempty"`
	McastDLID   any      `json:"mcast_dlid,omitempty"`
	MAC         string   `json:"mac,omitempty"` // default: derived from the LID and vesw
	IfName      string   `json:"ifname,omitempty"`
	NetNS       string   `json:"netns,omitempty"` // name, pid:N or absolute path
	Addresses   []string `json:"addresses,omitempty"`
	ConfigState string   `json:"config_state,omitempty"` // forwarding (default) or drop_all
	// Owner tags the VNIC for vnic_del and vnic_gc by owner (the CNI plugin
	// uses "cni:<container id>:<ifname>").
	Owner string `json:"owner,omitempty"`
}

// VNICDelArgs are the arguments of vnic_del: a vport, or an owner. Deleting
// by owner succeeds when there is nothing to delete.
type VNICDelArgs struct {
	VPort *int   `json:"vport,omitempty"`
	Owner string `json:"owner,omitempty"`
}

// VNICGCArgs are the arguments of vnic_gc: every runtime VNIC whose owner
// starts with Prefix (non-empty) and is not in Keep is deleted.
type VNICGCArgs struct {
	Prefix string   `json:"prefix"`
	Keep   []string `json:"keep"`
}

// VNICDeleted is the answer of vnic_del and vnic_gc.
type VNICDeleted struct {
	Deleted []VNICStatus `json:"deleted"`
}

// Claim is a container's hold on an EM-created port.
type Claim struct {
	VPort uint8  `json:"vport"`
	VESW  uint16 `json:"vesw"`
	Owner string `json:"owner,omitempty"`
	// NetNS and IfName are where the netdev is while claimed (NetNS as the
	// caller named it: a name, pid:N or a path).
	NetNS  string `json:"netns"`
	IfName string `json:"ifname"`
	// Home is the netdev's name in vnicd's namespace, where the end of the
	// claim puts it back.
	Home string `json:"home"`
	// Addresses are those vnic_add set (the CNI plugin sets its IPAM's
	// itself).
	Addresses []string `json:"addresses,omitempty"`
	// NSDev and NSIno identify the namespace (its nsfs inode), so that a
	// namespace path that names another namespace after a restart is not
	// taken for the claim's.
	NSDev uint64 `json:"ns_dev"`
	NSIno uint64 `json:"ns_ino"`
	// State is "active" (the port runs in the namespace) or "pending"
	// (after a restart, until the EM makes the port again); answers only.
	State string `json:"state,omitempty"`
}

// Claim states.
const (
	ClaimActive  = "active"
	ClaimPending = "pending"
)

// Counter is one named counter, as ethtool -S shows it.
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// MaxVPort is the largest vport index a command takes: the VEMA advertises
// 255 vports (OPA_VNIC_MAX_NUM_VPORT), indices 0..254.
const MaxVPort = 254
