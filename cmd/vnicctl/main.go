// Command vnicctl talks to a running vnicd over its control socket.
//
// Usage:
//
//	vnicctl [--socket PATH] [--json] vnics
//	vnicctl [--socket PATH] [--json] counters [VPORT]
//	vnicctl [--socket PATH] [--json] hfi
//	vnicctl [--socket PATH] [--json] fabric
//	vnicctl [--socket PATH] [--json] vesws
//	vnicctl [--socket PATH] [--json] path LID|NODE
//
// Without --socket it uses the only socket in /run/opavnic. Exit codes: 0
// success, 1 the daemon could not answer, 2 bad usage.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/opavnic/opavnic/vnicd"
)

// socketDir is where daemons put their control sockets by default.
const socketDir = "/run/opavnic"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: vnicctl [--socket PATH] [--json] COMMAND
commands:
  vnics              VNIC ports: interface, vesw, state
  counters [VPORT]   per-port counters under the kernel's ethtool names
  hfi                the fabric port: LID, state, drop counters
  fabric             the LID directory and multicast groups
  vesws              the vesw config of each local port
  path LID|NODE      SA path record from this node to a LID (or a peer's name),
                     asked of the fabric manager
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vnicctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr); fs.PrintDefaults() }
	socket := fs.String("socket", "", "control socket of the daemon (default: the only one in "+socketDir+")")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		usage(stderr)
		return 2
	}
	path := *socket
	if path == "" {
		p, err := defaultSocket()
		if err != nil {
			fmt.Fprintf(stderr, "vnicctl: %v\n", err)
			return 2
		}
		path = p
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	var err error
	switch cmd {
	case "vnics":
		var v []vnicd.VNICStatus
		if err = vnicd.Call(path, "vnics", nil, &v); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "VPORT\tIFNAME\tNETNS\tMAC\tVESW\tPKEY\tMTU\tSLID\tMCAST\tCONFIG\tOPER\tLINK")
				for _, s := range v {
					link := "down"
					if s.LinkUp {
						link = "up"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.VPort, s.IfName, dash(s.NetNS),
						s.MAC, s.VESW, s.PKey, s.EthMTU, s.SLID, s.McastDLID, s.ConfigState, s.OperState, link)
				}
			})
		}
	case "counters":
		var a struct {
			VPort *int `json:"vport,omitempty"`
		}
		if len(rest) > 1 {
			usage(stderr)
			return 2
		}
		if len(rest) == 1 {
			n, perr := strconv.Atoi(rest[0])
			if perr != nil || n < 0 || n > 254 {
				fmt.Fprintf(stderr, "vnicctl: VPORT %q is not a number 0..254\n", rest[0])
				return 2
			}
			a.VPort = &n
		}
		var v []vnicd.PortCounterSet
		if err = vnicd.Call(path, "counters", a, &v); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				fmt.Fprint(tw, "COUNTER")
				for _, p := range v {
					fmt.Fprintf(tw, "\t%s (vport %d)", p.IfName, p.VPort)
				}
				fmt.Fprintln(tw)
				if len(v) == 0 {
					return
				}
				for i, c := range v[0].Counters {
					fmt.Fprint(tw, c.Name)
					for _, p := range v {
						fmt.Fprintf(tw, "\t%d", p.Counters[i].Value)
					}
					fmt.Fprintln(tw)
				}
			})
		}
	case "hfi":
		var v vnicd.HFIStatus
		if err = vnicd.Call(path, "hfi", nil, &v); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				ext := ""
				if v.Extended {
					ext = " (extended)"
				}
				fmt.Fprintf(tw, "node\t%s\nlid\t%s%s\nstate\t%s\nlisten\t%s\nverify_icrc\t%v\n", v.Node, v.LID, ext, v.State, v.Listen, v.VerifyICRC)
				for _, c := range v.Counters {
					fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
				}
			})
		}
	case "fabric":
		var v []vnicd.FabricEntry
		if err = vnicd.Call(path, "fabric", nil, &v); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "LID\tENDPOINT\tMEMBERS")
				for _, e := range v {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", e.LID, dash(e.Endpoint), dash(e.Members))
				}
			})
		}
	case "vesws":
		var v []vnicd.VESWStatus
		if err = vnicd.Call(path, "vesws", nil, &v); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "VPORT\tIFNAME\tVESW\tFABRIC\tPKEY\tMCAST\tDEFAULT_PORTS\tRC\tETH_MTU")
				for _, s := range v {
					fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\n", s.VPort, s.IfName, s.VESWID, s.FabricID,
						s.PKey, s.McastDLID, dash(strings.Join(s.DefaultPorts, ",")), s.RC, s.EthMTU)
				}
			})
		}
	case "path":
		if len(rest) != 1 {
			usage(stderr)
			return 2
		}
		var v vnicd.PathStatus
		if err = vnicd.Call(path, "path", map[string]string{"lid": rest[0]}, &v); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SGID\tDGID\tSLID\tDLID\tHOP_LIMIT\tPKEY\tMTU\tRATE")
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\n", v.SGID, v.DGID, v.SLID, v.DLID, v.HopLimit, v.PKey, v.MTU, v.Rate)
			})
		}
	default:
		fmt.Fprintf(stderr, "vnicctl: unknown command %q\n", cmd)
		usage(stderr)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "vnicctl: %v\n", err)
		return 1
	}
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func show(w io.Writer, asJSON bool, v any, table func(*tabwriter.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func defaultSocket() (string, error) {
	matches, _ := filepath.Glob(filepath.Join(socketDir, "*.sock"))
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", errors.New("no daemon socket in " + socketDir + "; is vnicd running? (--socket PATH)")
	}
	return "", fmt.Errorf("several daemon sockets in %s, choose one with --socket: %s", socketDir, strings.Join(matches, " "))
}
