package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/opavnic/opavnic/vnicd/ctl"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// cmdVNIC is vnicctl's command for the daemon's vnic_add and vnic_del.
const cmdVNIC = "vnic"

// vnicSub is the subcommand of vnicctl vnic for the control command cmd
// (ctl.CmdVNICAdd, ctl.CmdVNICDel).
func vnicSub(cmd string) string {
	if cmd == ctl.CmdVNICAdd {
		return "add"
	}
	return "del"
}

// errUsage is a parse error whose message the parser has written to stderr.
var errUsage = errors.New("bad usage")

// parseVNIC reads "vnic add ..." and "vnic del ..." into the control command
// and its arguments. It needs no daemon, so that "vnic add --help" works
// with none running. When ok is false nothing is to be sent: exit with code,
// 2 for bad usage or 0 after --help, the message already written to stderr.
func parseVNIC(args []string, stderr io.Writer) (cmd string, a any, code int, ok bool) {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "vnicctl: vnic needs a subcommand: add or del")
		return "", nil, 2, false
	}
	var err error
	switch args[0] {
	case "add":
		cmd = ctl.CmdVNICAdd
		a, err = parseVNICAdd(args[1:], stderr)
	case "del", "delete", "rm":
		cmd = ctl.CmdVNICDel
		a, err = parseVNICDel(args[1:], stderr)
	default:
		fmt.Fprintf(stderr, "vnicctl: unknown vnic subcommand %q: add or del\n", args[0])
		return "", nil, 2, false
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return "", nil, 0, false
	case err != nil:
		return "", nil, 2, false
	}
	return cmd, a, 0, true
}

// parseVNICAdd reads the flags of "vnic add". Numbers go to the daemon as
// written (decimal or 0x hex) and are checked there, by the config's rules.
// It returns flag.ErrHelp after --help, errUsage after a usage error.
func parseVNICAdd(args []string, stderr io.Writer) (ctl.VNICAddArgs, error) {
	fs := flag.NewFlagSet("vnicctl vnic add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a ctl.VNICAddArgs
	var addrs listFlag
	vport := fs.String("vport", "", "vport index 0..254 (default: the lowest free one)")
	vesw := fs.String("vesw", "", "vesw id 1..4095 (required)")
	pkey := fs.String("pkey", "", "partition key, such as 0x8001 (required on a static node; on a managed one, checked against the EM's)")
	mtu := fs.String("eth-mtu", "", "eth_mtu of the vesw (default 1500)")
	mcast := fs.String("mcast-dlid", "", "multicast DLID of the vesw, a group of the config, such as 0xF00001")
	fs.StringVar(&a.MAC, "mac", "", "MAC address (default: derived from the node's LID and the vesw)")
	fs.StringVar(&a.IfName, "ifname", "", "netdev name (default vnic<vport>)")
	fs.StringVar(&a.NetNS, "netns", "", "network namespace: a name under /var/run/netns, pid:N or a path (default: vnicd's)")
	fs.Var(&addrs, "address", "address with prefix length, such as 10.1.0.5/24 (repeatable)")
	fs.StringVar(&a.ConfigState, "config-state", "", "forwarding (default) or drop_all")
	fs.StringVar(&a.Owner, "owner", "", "owner tag, for vnic del --owner")
	if err := fs.Parse(args); err != nil {
		return a, usageErr(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vnicctl: vnic add takes flags only, not %q\n", fs.Arg(0))
		return a, errUsage
	}
	if *vesw == "" {
		fmt.Fprintf(stderr, "vnicctl: vnic add needs --vesw\nusage: vnicctl vnic add --vesw ID [--pkey PKEY] [--ifname NAME] [--netns NS] [--address CIDR]... (--help for all)\n")
		return a, errUsage
	}
	a.VESW = *vesw
	for _, f := range []struct {
		v   string
		dst *any
	}{{*vport, &a.VPort}, {*pkey, &a.PKey}, {*mtu, &a.EthMTU}, {*mcast, &a.McastDLID}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	a.Addresses = addrs
	return a, nil
}

// parseVNICDel reads the arguments of "vnic del", with parseVNICAdd's errors.
func parseVNICDel(args []string, stderr io.Writer) (ctl.VNICDelArgs, error) {
	fs := flag.NewFlagSet("vnicctl vnic del", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a ctl.VNICDelArgs
	fs.StringVar(&a.Owner, "owner", "", "delete the VNIC of this owner instead of a vport")
	if err := fs.Parse(args); err != nil {
		return a, usageErr(err)
	}
	err := error(nil)
	switch {
	case fs.NArg() == 0 && a.Owner == "":
		err = errors.New("vnic del needs a VPORT or --owner OWNER")
	case fs.NArg() > 1 || (fs.NArg() == 1 && a.Owner != ""):
		err = errors.New("vnic del takes one VPORT or --owner OWNER")
	case fs.NArg() == 1:
		n, perr := strconv.Atoi(fs.Arg(0))
		if perr != nil || n < 0 || n > ctl.MaxVPort {
			err = fmt.Errorf("VPORT %q is not a number 0..%d", fs.Arg(0), ctl.MaxVPort)
		}
		a.VPort = &n
	}
	if err != nil {
		fmt.Fprintf(stderr, "vnicctl: %v\nusage: vnicctl vnic del VPORT | --owner OWNER\n", err)
		return a, errUsage
	}
	return a, nil
}

// usageErr is a flag.FlagSet's Parse error (already written to stderr):
// flag.ErrHelp after -h or --help, else errUsage.
func usageErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return flag.ErrHelp
	}
	return errUsage
}
