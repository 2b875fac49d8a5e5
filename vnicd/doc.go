// Package vnicd is the opavnic per-host daemon: it turns a config
// (vnicd/config) into a running node: it binds the UDP sockets of the
// software HFI, puts the engine's ports on TAP netdevs, and runs the node's
// VEMA agent
// and SMA, which are the only way a port's configuration changes. In static
// mode the daemon drives its own agent from the config; in managed mode the
// fabric manager's SM and EM drive it over the fabric. Either way a
// management goroutine answers the MADs, which the data plane hands it
// (Mgmt.Receive).
//
// It also keeps the state that outlives a restart (runtime VNICs made with
// vnic_add, and in managed mode the claims of EM-made ports by containers,
// in state files beside the control socket), serves the control socket,
// and exports metrics.
//
// The layers below: vnicd/engine (ports and the data path), vnicd/tap (the
// netdevs), hfi (the fabric port and its transport), encap (the wire
// format); docs/design.md draws them.
package vnicd
