package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/opavnic/opavnic/vnicd"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// vnicCmd runs "vnic add" and "vnic del". It returns 2 for bad usage (with
// the message written to stderr), else 0 and the daemon's error.
func vnicCmd(path string, args []string, stdout, stderr io.Writer, asJSON bool) (int, error) {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "vnicctl: vnic needs a subcommand: add or del")
		return 2, nil
	}
	switch args[0] {
	case "add":
		a, ok := parseVNICAdd(args[1:], stderr)
		if !ok {
			return 2, nil
		}
		return 0, generic(path, "vnic_add", a, stdout, asJSON)
	case "del", "delete", "rm":
		a, ok := parseVNICDel(args[1:], stderr)
		if !ok {
			return 2, nil
		}
		return 0, generic(path, "vnic_del", a, stdout, asJSON)
	}
	fmt.Fprintf(stderr, "vnicctl: unknown vnic subcommand %q: add or del\n", args[0])
	return 2, nil
}

// parseVNICAdd reads the flags of "vnic add". Numbers go to the daemon as
// written (decimal or 0x hex) and are checked there, by the config's rules.
func parseVNICAdd(args []string, stderr io.Writer) (vnicd.VNICAddArgs, bool) {
	fs := flag.NewFlagSet("vnicctl vnic add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a vnicd.VNICAddArgs
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
		return a, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vnicctl: vnic add takes flags only, not %q\n", fs.Arg(0))
		return a, false
	}
	if *vesw == "" {
		fmt.Fprintf(stderr, "vnicctl: vnic add needs --vesw\nusage: vnicctl vnic add --vesw ID [--pkey PKEY] [--ifname NAME] [--netns NS] [--address CIDR]... (--help for all)\n")
		return a, false
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
	return a, true
}

func parseVNICDel(args []string, stderr io.Writer) (vnicd.VNICDelArgs, bool) {
	fs := flag.NewFlagSet("vnicctl vnic del", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a vnicd.VNICDelArgs
	fs.StringVar(&a.Owner, "owner", "", "delete the VNIC of this owner instead of a vport")
	if err := fs.Parse(args); err != nil {
		return a, false
	}
	err := error(nil)
	switch {
	case fs.NArg() == 0 && a.Owner == "":
		err = errors.New("vnic del needs a VPORT or --owner OWNER")
	case fs.NArg() > 1 || (fs.NArg() == 1 && a.Owner != ""):
		err = errors.New("vnic del takes one VPORT or --owner OWNER")
	case fs.NArg() == 1:
		n, perr := strconv.Atoi(fs.Arg(0))
		if perr != nil || n < 0 || n > vnicd.MaxVPort {
			err = fmt.Errorf("VPORT %q is not a number 0..%d", fs.Arg(0), vnicd.MaxVPort)
		}
		a.VPort = &n
	}
	if err != nil {
		fmt.Fprintf(stderr, "vnicctl: %v\nusage: vnicctl vnic del VPORT | --owner OWNER\n", err)
		return a, false
	}
	return a, true
}
