// Command vnic-cni is a CNI plugin (spec 1.0.0 and 1.1.0) that gives a
// container a VNIC of the local vnicd: ADD asks vnicd, over its control
// socket, for a VNIC on the network's vesw inside the container's network
// namespace, then runs the IPAM plugin and sets the addresses and routes on
// it; DEL gives the VNIC back and releases the addresses; CHECK verifies
// both; GC gives back the VNICs of attachments the runtime no longer knows
// and forwards the GC to the IPAM plugin;
// STATUS reports whether vnicd answers.
//
// Network config:
//
//	{"cniVersion": "1.0.0", "name": "red", "type": "vnic-cni",
//	 "vesw": 1, "pkey": "0x8001", "mcast_dlid": "0xF00001", "mtu": 1400,
//	 "socket": "/run/opavnic/vnicd-host.sock",
//	 "ipam": {"type": "host-local", "subnet": "10.1.0.0/24"}}
//
// vesw is required. With a static-mode vnicd, ADD makes a new VNIC: pkey is
// required too, and mcast_dlid (a multicast group of vnicd's config that
// carries the vesw's broadcasts: without one, ARP does not work), mtu (the
// vesw's eth_mtu, default 1500) and mac (default derived from the node's LID
// and the vesw) are optional. With a managed vnicd (a fabric manager's EM
// owns the ports), ADD claims the node's free EM-created port on the vesw
// and moves it into the container: its MAC, pkey, MTU and multicast DLID
// are the EM's, so pkey, mtu and mcast_dlid may be left out (when given
// they must match the EM's) and mac may not be given. socket defaults to
// the only vnicd socket (vnicd-*.sock, vnicd's default name) in
// /run/opavnic; other sockets there, such as opafm's, are not vnicd's.
//
// A VNIC is tagged in vnicd with the owner "cni:<network>:<container
// id>:<ifname>", which is how DEL, CHECK and GC find it. vnicd keeps its
// runtime VNICs (static) and claims (managed) across a restart: the
// container's interface stays, carrier off, until vnicd takes it over
// again; a DEL while it is down removes the interface from the container
// itself, and vnicd drops the VNIC or ends the claim when it starts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/containernetworking/cni/pkg/invoke"
	cnins "github.com/containernetworking/cni/pkg/ns"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/vnicd/ctl"
	"github.com/opavnic/opavnic/vnicd/tap"
)

// socketDir is where vnicd puts its control socket by default
// (vnicd.DefaultControlSocket); a variable for the tests.
var socketDir = ctl.DefaultDir

// socketGlob matches vnicd's default socket names in socketDir, and not the
// opafm's (opafm-<name>.sock) that may be beside them.
const socketGlob = "vnicd-*.sock"

// errNoVnicd is the error of a network config without a socket when
// socketDir holds no vnicd socket: vnicd is not running (a stopped vnicd
// removes its socket), which DEL and GC treat like a vnicd that does not
// answer.
var errNoVnicd = fmt.Errorf("vnic-cni: no \"socket\" in the network config and no vnicd socket (%s) in %s; is vnicd running?", socketGlob, socketDir)

// errPluginNotAvailable is the spec's well-known error 50 (STATUS: the
// plugin cannot service ADD requests).
const errPluginNotAvailable uint = 50

// NetConf is the network config of vnic-cni.
type NetConf struct {
	types.NetConf
	VESW      any    `json:"vesw"`
	PKey      any    `json:"pkey"`
	McastDLID any    `json:"mcast_dlid,omitempty"`
	MTU       any    `json:"mtu,omitempty"`
	MAC       string `json:"mac,omitempty"`
	Socket    string `json:"socket,omitempty"`
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck, GC: cmdGC, Status: cmdStatus},
		version.PluginSupports("1.0.0", "1.1.0"), "vnic-cni: VNICs of opavnic's vnicd for containers, "+buildinfo.Read().String())
}

// loadConf reads the network config and finds vnicd's socket.
func loadConf(data []byte) (*NetConf, error) {
	c, err := parseConf(data)
	if err != nil {
		return nil, err
	}
	if err := findSocket(c); err != nil {
		return nil, err
	}
	return c, nil
}

// parseConf reads the network config; Socket stays empty if it names none.
// Its errors are the spec's well-known codes: 6 (failed to decode) for a
// config that does not decode, 7 (invalid network config) for one without
// a vesw.
func parseConf(data []byte) (*NetConf, error) {
	var c NetConf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "vnic-cni: bad network config: "+err.Error(), "")
	}
	if c.VESW == nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "vnic-cni: the network config needs vesw (and pkey, unless vnicd is managed by a fabric manager)", "")
	}
	return &c, nil
}

// findSocket sets c.Socket, when the config names none, to the only vnicd
// socket in socketDir. None gives errNoVnicd; several are an error that
// asks for the socket to be named.
func findSocket(c *NetConf) error {
	if c.Socket != "" {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(socketDir, socketGlob))
	switch len(matches) {
	case 0:
		return errNoVnicd
	case 1:
		c.Socket = matches[0]
		return nil
	}
	return fmt.Errorf("vnic-cni: no \"socket\" in the network config and %d vnicd sockets (%s) in %s; name vnicd's control socket", len(matches), socketGlob, socketDir)
}

// owner is the tag of the VNIC of one attachment.
func owner(network, containerID, ifName string) string {
	return ownerPrefix(network) + containerID + ":" + ifName
}

func ownerPrefix(network string) string { return "cni:" + network + ":" }

func cmdAdd(args *skel.CmdArgs) error {
	conf, err := loadConf(args.StdinData)
	if err != nil {
		if errors.Is(err, errNoVnicd) {
			return tryAgain(err)
		}
		return err
	}
	if args.Netns == "" {
		return errors.New("vnic-cni: no network namespace (CNI_NETNS)")
	}
	// skel refuses the plugin's own namespace (the host's: a stale
	// /proc/PID/ns/net whose PID a host process took), but only after
	// cmdAdd has run; refuse it before vnicd puts a VNIC there.
	if same, cerr := ownNetNS(args); cerr != nil {
		return cerr
	} else if same {
		return types.NewError(types.ErrInvalidNetNS, "vnic-cni: CNI_NETNS "+args.Netns+" is the plugin's own network namespace, not a container's", "")
	}
	// After another plugin in a chain, its result is passed on with this
	// VNIC added (SPEC.md, ADD: a plugin MUST handle prevResult).
	prev := &current.Result{}
	if err := version.ParsePrevResult(&conf.NetConf); err != nil {
		return fmt.Errorf("vnic-cni: prevResult: %w", err)
	}
	if conf.PrevResult != nil {
		if prev, err = current.NewResultFromResult(conf.PrevResult); err != nil {
			return fmt.Errorf("vnic-cni: prevResult: %w", err)
		}
	}
	own := owner(conf.Name, args.ContainerID, args.IfName)
	vnicd := ctl.NewClient(conf.Socket)
	st, err := vnicd.VNICAdd(context.TODO(), ctl.VNICAddArgs{
		VESW: conf.VESW, PKey: conf.PKey, McastDLID: conf.McastDLID, EthMTU: conf.MTU, MAC: conf.MAC,
		IfName: args.IfName, NetNS: args.Netns, Owner: own,
	})
	if err != nil {
		err = fmt.Errorf("vnic-cni: vnicd at %s: %w", conf.Socket, err)
		if transient(err) {
			return tryAgain(err)
		}
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_, _ = vnicd.VNICDel(context.TODO(), ctl.VNICDelArgs{Owner: own})
		}
	}()
	// result is this plugin's part: its interface is index 0 there, as
	// ipam.ConfigureIface wants, and len(prev.Interfaces) in the output.
	result := &current.Result{CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{{Name: st.IfName, Mac: st.MAC, Mtu: int(st.EthMTU), Sandbox: args.Netns}}}
	if conf.IPAM.Type != "" {
		r, err := ipam.ExecAdd(conf.IPAM.Type, args.StdinData)
		if err != nil {
			return fmt.Errorf("vnic-cni: IPAM %s: %w", conf.IPAM.Type, err)
		}
		defer func() {
			if !ok {
				_ = ipam.ExecDel(conf.IPAM.Type, args.StdinData)
			}
		}()
		ir, err := current.NewResultFromResult(r)
		if err != nil {
			return fmt.Errorf("vnic-cni: IPAM %s result: %w", conf.IPAM.Type, err)
		}
		if len(ir.IPs) == 0 {
			return fmt.Errorf("vnic-cni: IPAM %s gave no address", conf.IPAM.Type)
		}
		result.IPs, result.Routes, result.DNS = ir.IPs, ir.Routes, ir.DNS
		for _, ip := range result.IPs {
			ip.Interface = current.Int(0)
		}
		err = ns.WithNetNSPath(args.Netns, func(ns.NetNS) error { return ipam.ConfigureIface(args.IfName, result) })
		if err != nil {
			return fmt.Errorf("vnic-cni: configuring %s in %s: %w", args.IfName, args.Netns, err)
		}
	}
	ok = true
	out := &current.Result{CNIVersion: current.ImplementedSpecVersion,
		Interfaces: append(prev.Interfaces, result.Interfaces...),
		IPs:        prev.IPs, Routes: append(prev.Routes, result.Routes...), DNS: prev.DNS}
	for _, ip := range result.IPs {
		ip.Interface = current.Int(len(prev.Interfaces))
		out.IPs = append(out.IPs, ip)
	}
	if !result.DNS.IsEmpty() {
		out.DNS = result.DNS
	}
	return types.PrintResult(out, conf.CNIVersion)
}

// unreachable reports whether err means no vnicd serves the socket, or
// there is no vnicd socket to find: then the container's interface, if any,
// is a persistent TAP vnicd left.
func unreachable(err error) bool {
	return errors.Is(err, errNoVnicd) || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}

// transient reports whether an ADD failed for a reason that should clear
// up by itself: vnicd not running (it is restarted), vnicd busy (busy), or
// no free port on the vesw (ctl.CodeNoFreePort: a managed node the fabric
// manager has not configured yet, or every port taken until a container
// goes).
func transient(err error) bool {
	return unreachable(err) || busy(err) || errors.Is(err, ctl.ErrNoFreePort)
}

// busy reports whether vnicd answered that it did nothing and the same
// request later should go through: it was serving as many requests as it
// takes (ctl.CodeBusy: many pods at once on the node), or the request's
// turn came too close to its timeout (ctl.CodeLate). The codes decide; an
// answer without one (a vnicd older than the codes) is not retried.
func busy(err error) bool { return errors.Is(err, ctl.ErrBusy) || errors.Is(err, ctl.ErrLate) }

// tryAgain is err as the CNI error "try again later" (code 11), which tells
// the runtime to retry the command rather than give up (SPEC.md, Error
// codes).
func tryAgain(err error) error {
	return types.NewError(types.ErrTryAgainLater, err.Error(), "")
}

// vnicdErr is err from vnicd at conf.Socket as DEL and CHECK report it: try
// again later when vnicd was busy (it did nothing), else as it came.
func vnicdErr(conf *NetConf, err error) error {
	err = fmt.Errorf("vnic-cni: vnicd at %s: %w", conf.Socket, err)
	if busy(err) {
		return tryAgain(err)
	}
	return err
}

// claimedAlias reports whether a netdev's alias is that of a port vnicd
// left in a container (vnicd's claimTag: a claim or a runtime VNIC).
func claimedAlias(alias string) bool { return strings.HasPrefix(alias, "opavnic:") }

// where names the vnicd a DEL or GC talked to, for its errors.
func where(conf *NetConf) string {
	if conf.Socket == "" {
		return "vnicd (no socket found in " + socketDir + ")"
	}
	return "vnicd at " + conf.Socket
}

// ownNetNS reports whether CNI_NETNS is the plugin's own network namespace
// (the host's), as skel checks it, unless CNI_NETNS_OVERRIDE says to let it
// through.
func ownNetNS(args *skel.CmdArgs) (bool, error) {
	if o := args.NetnsOverride; strings.ToUpper(o) == "TRUE" || o == "1" {
		return false, nil
	}
	same, cerr := cnins.CheckNetNS(args.Netns)
	if cerr != nil { // a *types.Error: a nil one must not become a non-nil error
		return false, cerr
	}
	return same, nil
}

// removeTAP is vnicd.RemovePersistentTAP; tests replace it.
var removeTAP = tap.RemovePersistent

func cmdDel(args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	err = findSocket(conf)
	if err == nil {
		_, err = ctl.NewClient(conf.Socket).VNICDel(context.TODO(), ctl.VNICDelArgs{Owner: owner(conf.Name, args.ContainerID, args.IfName)})
	}
	switch {
	case err != nil && unreachable(err) && args.Netns != "":
		// No vnicd: its runtime VNIC (static) or claimed port (managed)
		// stays in the container (persistent) for vnicd to take over when
		// it starts. Remove it here; vnicd drops the VNIC or ends the
		// claim when it finds the netdev gone. Not in the plugin's own
		// namespace: a CNI_NETNS that names it (a stale /proc/PID/ns/net
		// whose PID a host process took) is not the container's, whose
		// namespace, and the TAP in it, are gone; a host netdev of the
		// same name may be another VNIC of vnicd's.
		if own, _ := ownNetNS(args); own {
			break
		}
		if err := removeTAP(args.Netns, args.IfName, claimedAlias); err != nil && !errors.Is(err, tap.ErrNotOurs) {
			return fmt.Errorf("vnic-cni: %s does not answer, and removing %s: %w", where(conf), args.IfName, err)
		}
	case err != nil && !unreachable(err):
		if conf.Socket == "" {
			return err // findSocket's
		}
		return vnicdErr(conf, err)
	}
	if conf.IPAM.Type != "" {
		if err := ipam.ExecDel(conf.IPAM.Type, args.StdinData); err != nil {
			return fmt.Errorf("vnic-cni: IPAM %s: %w", conf.IPAM.Type, err)
		}
	}
	return nil
}

// missingVNIC is CHECK's error when vnicd lists no VNIC of owner. A
// managed vnicd that restarted holds its claims pending until the EM makes
// their ports again: that is said, as try again later (code 11), rather
// than that the VNIC is gone.
func missingVNIC(socket, owner string) error {
	if cs, err := ctl.NewClient(socket).Claims(context.TODO()); err == nil {
		for _, c := range cs {
			if c.Owner == owner && c.State == ctl.ClaimPending {
				return types.NewError(types.ErrTryAgainLater, fmt.Sprintf("vnic-cni: vnicd's claim of %s (vport %d, vesw %d) is pending: "+
					"vnicd restarted and the fabric manager has not configured the port again yet", owner, c.VPort, c.VESW), "")
			}
		}
	}
	return fmt.Errorf("vnic-cni: vnicd has no VNIC of %s", owner)
}

func cmdCheck(args *skel.CmdArgs) error {
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	if err := version.ParsePrevResult(&conf.NetConf); err != nil {
		return fmt.Errorf("vnic-cni: prevResult: %w", err)
	}
	if conf.PrevResult == nil {
		return errors.New("vnic-cni: CHECK needs a prevResult")
	}
	prev, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return fmt.Errorf("vnic-cni: prevResult: %w", err)
	}
	var want *current.Interface
	wantIdx := -1
	for n, i := range prev.Interfaces {
		if i.Name == args.IfName && i.Sandbox == args.Netns {
			want, wantIdx = i, n
		}
	}
	if want == nil {
		return fmt.Errorf("vnic-cni: prevResult has no interface %s in %s", args.IfName, args.Netns)
	}
	own := owner(conf.Name, args.ContainerID, args.IfName)
	vs, err := ctl.NewClient(conf.Socket).VNICs(context.TODO())
	if err != nil {
		return vnicdErr(conf, err)
	}
	found := false
	for _, v := range vs {
		if v.Owner == own {
			found = true
			if vesw, ok := number(conf.VESW); ok && uint64(v.VESW) != vesw {
				if v.VESW == 0 { // DeleteVESW: the member left the fabric config
					return fmt.Errorf("vnic-cni: vnicd's VNIC of %s is on no vesw (the EM took it off vesw %d)", own, vesw)
				}
				return fmt.Errorf("vnic-cni: vnicd's VNIC of %s is on vesw %d, the network's is %d", own, v.VESW, vesw)
			}
			if v.OperState != "FORWARDING" {
				return fmt.Errorf("vnic-cni: vnicd's VNIC of %s is %s, not FORWARDING", own, v.OperState)
			}
			if !strings.EqualFold(v.MAC, want.Mac) {
				return fmt.Errorf("vnic-cni: vnicd's VNIC of %s has MAC %s, prevResult %s", own, v.MAC, want.Mac)
			}
		}
	}
	if !found {
		return missingVNIC(conf.Socket, own)
	}
	err = ns.WithNetNSPath(args.Netns, func(ns.NetNS) error {
		l, err := netlink.LinkByName(args.IfName)
		if err != nil {
			return fmt.Errorf("interface %s: %w", args.IfName, err)
		}
		hw, _ := net.ParseMAC(want.Mac)
		if l.Attrs().HardwareAddr.String() != hw.String() {
			return fmt.Errorf("interface %s has MAC %s, prevResult %s", args.IfName, l.Attrs().HardwareAddr, want.Mac)
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, ip := range prev.IPs {
			if ip.Interface != nil && *ip.Interface != wantIdx {
				continue // another plugin's interface in a chain
			}
			have := false
			for _, a := range addrs {
				have = have || a.IPNet.String() == ip.Address.String()
			}
			if !have {
				return fmt.Errorf("interface %s lacks address %s", args.IfName, ip.Address.String())
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("vnic-cni: in %s: %w", args.Netns, err)
	}
	if conf.IPAM.Type != "" {
		if err := ipam.ExecCheck(conf.IPAM.Type, args.StdinData); err != nil {
			return fmt.Errorf("vnic-cni: IPAM %s: %w", conf.IPAM.Type, err)
		}
	}
	return nil
}

// number reads a config number: a JSON number or a string in decimal or
// 0x hex.
func number(v any) (uint64, bool) {
	switch n := v.(type) {
	case float64:
		if n >= 0 && n == float64(uint64(n)) {
			return uint64(n), true
		}
	case string:
		u, err := strconv.ParseUint(n, 0, 64)
		return u, err == nil
	}
	return 0, false
}

// cmdGC removes the VNICs of this network whose attachment is not in the
// runtime's valid list, releases their addresses with the IPAM plugin's
// DEL (host-local has no GC of its own), and then forwards the GC to the
// IPAM plugin (SPEC.md, GC: a plugin MUST forward it to its delegated
// plugins), which releases what no VNIC of vnicd's names any more, for
// example the address of a VNIC vnicd dropped at a restart. It goes on
// past an error, as the spec asks, and reports them all.
func cmdGC(args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	keep := []string{}
	for _, a := range conf.ValidAttachments {
		keep = append(keep, owner(conf.Name, a.ContainerID, a.IfName))
	}
	var errs []error
	var del ctl.VNICDeleted
	err = findSocket(conf)
	if err == nil {
		del, err = ctl.NewClient(conf.Socket).VNICGC(context.TODO(), ctl.VNICGCArgs{Prefix: ownerPrefix(conf.Name), Keep: keep})
	}
	switch {
	case err == nil, unreachable(err): // no vnicd: nothing it could give back
	case conf.Socket == "":
		errs = append(errs, err) // findSocket's
	default:
		errs = append(errs, fmt.Errorf("vnic-cni: vnicd at %s: %w", conf.Socket, err))
	}
	if conf.IPAM.Type == "" {
		return errors.Join(errs...)
	}
	for _, d := range del.Deleted {
		rest := strings.TrimPrefix(d.Owner, ownerPrefix(conf.Name))
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			continue
		}
		os.Setenv("CNI_CONTAINERID", rest[:i])
		os.Setenv("CNI_IFNAME", rest[i+1:])
		os.Setenv("CNI_COMMAND", "DEL")
		if err := ipam.ExecDel(conf.IPAM.Type, args.StdinData); err != nil {
			errs = append(errs, fmt.Errorf("IPAM %s release of %s: %w", conf.IPAM.Type, d.Owner, err))
		}
	}
	if err := invoke.DelegateGC(context.TODO(), conf.IPAM.Type, args.StdinData, nil); err != nil {
		errs = append(errs, fmt.Errorf("vnic-cni: IPAM %s GC: %w", conf.IPAM.Type, err))
	}
	return errors.Join(errs...)
}

func cmdStatus(args *skel.CmdArgs) error {
	conf, err := loadConf(args.StdinData)
	if err != nil {
		return types.NewError(errPluginNotAvailable, err.Error(), "")
	}
	if _, err := ctl.NewClient(conf.Socket).VNICs(context.TODO()); err != nil {
		return types.NewError(errPluginNotAvailable, "vnicd does not answer", err.Error())
	}
	if conf.IPAM.Type != "" {
		return ipam.ExecStatus(conf.IPAM.Type, args.StdinData)
	}
	return nil
}
