// Command vnicctl talks to a running vnicd or opafm over its control socket.
//
// Usage:
//
//	vnicctl [--socket PATH] [--json] vnics
//	vnicctl [--socket PATH] [--json] counters [VPORT]
//	vnicctl [--socket PATH] [--json] hfi
//	vnicctl [--socket PATH] [--json] fabric
//	vnicctl [--socket PATH] [--json] vesws
//	vnicctl [--socket PATH] [--json] path LID|NODE
//	vnicctl [--socket PATH] [--json] vnic add --vesw ID --pkey PKEY [--ifname NAME] [--netns NS] [--address CIDR]... [...]
//	vnicctl [--socket PATH] [--json] vnic del VPORT | --owner OWNER
//
// Without --socket it uses the only socket in /run/opavnic. Exit codes: 0
// success, 1 the daemon could not answer, 2 bad usage.
package main

import (
	"bytes"
	"context"
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

	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/vnicd/ctl"
)

// socketDir is where daemons put their control sockets by default; a
// variable for the tests.
var socketDir = "/run/opavnic"

// errNoDaemon is defaultSocket's error when socketDir holds no socket: no
// daemon runs to answer (exit 1, as for a socket nobody serves).
var errNoDaemon = errors.New("no daemon socket")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: vnicctl [--socket PATH] [--json] COMMAND
       vnicctl --version
commands of vnicd:
  vnics              VNIC ports: interface, vesw, state
  counters [VPORT]   per-port counters under the kernel's ethtool names
  hfi                the fabric port: LID, state, drop counters
  fabric             the LID directory, multicast groups, traffic per peer
  vesws              the vesw config of each local port
  path LID|NODE      SA path record from this node to a LID (or a peer's name),
                     asked of the fabric manager
  vnic add --vesw ID [--pkey PKEY] [OPTIONS]
                     static mode: add a VNIC while vnicd runs; managed mode:
                     claim this node's free EM-made port on the vesw and
                     move it into --netns; see vnicctl vnic add --help
  vnic del VPORT | --owner OWNER
                     remove a VNIC made by vnic add (managed: end the claim)
  claims             managed mode: the ports claimed for containers
commands of opafm:
  fabric             nodes: GUIDs, LIDs, endpoints, state, last answer, error
  vesws              the virtual Ethernet switches and their members
  path FROM TO       SA path record between two LIDs or node names
  reload             re-read the fabric config (as SIGHUP)
both:
  commands           what the daemon answers
  version            vnicctl's build and the daemon's (vnicctl --version: vnicctl's only)
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vnicctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr); fs.PrintDefaults() }
	socket := fs.String("socket", "", "control socket of the daemon (default: the only one in "+socketDir+")")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	version := fs.Bool("version", false, "print vnicctl's build (version, commit, Go toolchain) and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "vnicctl: --version takes no command: %v\n", fs.Args())
			return 2
		}
		fmt.Fprintf(stdout, "vnicctl %s\n", buildinfo.Read())
		return 0
	}
	if fs.NArg() == 0 {
		usage(stderr)
		return 2
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	if cmd == ctl.CmdVNICAdd || cmd == ctl.CmdVNICDel {
		// The control protocol's name (vnicctl commands lists it), not the CLI's.
		fmt.Fprintf(stderr, "vnicctl: %s is the daemon's name for it; run: vnicctl vnic %s ...\n", cmd, vnicSub(cmd))
		return 2
	}
	// The commands are the daemon's (ctl.Cmd*), but for "vnic", vnicctl's
	// own for vnic_add and vnic_del, and whatever else the daemon answers.
	switch cmd {
	case ctl.CmdCounters, ctl.CmdPath, cmdVNIC:
	default:
		// fabric, vesws, reload, commands, ... and vnics and hfi. A flag
		// after the command (vnics --json) is not read as one: refuse it.
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "vnicctl: %s takes no arguments (flags go before the command)\n", cmd)
			return 2
		}
	}
	// vnic add and del are read before the socket is looked for, so that
	// their usage errors and --help need no daemon.
	var vnicName string
	var vnicArgs any
	if cmd == cmdVNIC {
		var code int
		var ok bool
		if vnicName, vnicArgs, code, ok = parseVNIC(rest, stderr); !ok {
			return code
		}
	}
	path := *socket
	if path == "" {
		p, err := defaultSocket()
		if err != nil {
			fmt.Fprintf(stderr, "vnicctl: %v\n", err)
			if errors.Is(err, errNoDaemon) {
				return 1
			}
			return 2 // several: --socket must say which
		}
		path = p
	}
	c := ctl.NewClient(path)
	ctx := context.Background()
	var err error
	switch cmd {
	case ctl.CmdVNICs:
		var v []ctl.VNICStatus
		if v, err = c.VNICs(ctx); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				if len(v) == 0 {
					fmt.Fprintln(tw, "(none)") // as every empty list: not a bare header
					return
				}
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
	case ctl.CmdCounters:
		var a ctl.CountersArgs
		if len(rest) > 1 {
			usage(stderr)
			return 2
		}
		if len(rest) == 1 {
			n, perr := strconv.Atoi(rest[0])
			if perr != nil || n < 0 || n > ctl.MaxVPort {
				fmt.Fprintf(stderr, "vnicctl: VPORT %q is not a number 0..%d\n", rest[0], ctl.MaxVPort)
				return 2
			}
			a.VPort = &n
		}
		var v []ctl.PortCounterSet
		if v, err = c.Counters(ctx, a); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				if len(v) == 0 {
					fmt.Fprintln(tw, "(none)")
					return
				}
				fmt.Fprint(tw, "COUNTER")
				for _, p := range v {
					fmt.Fprintf(tw, "\t%s (vport %d)", p.IfName, p.VPort)
				}
				fmt.Fprintln(tw)
				// A row per counter name, in the order the ports give them;
				// a port without it (a daemon of another version) shows "-".
				var names []string
				known := map[string]bool{}
				vals := make([]map[string]uint64, len(v))
				for i, p := range v {
					vals[i] = make(map[string]uint64, len(p.Counters))
					for _, c := range p.Counters {
						if !known[c.Name] {
							known[c.Name] = true
							names = append(names, c.Name)
						}
						vals[i][c.Name] = c.Value
					}
				}
				for _, name := range names {
					fmt.Fprint(tw, name)
					for i := range v {
						if x, ok := vals[i][name]; ok {
							fmt.Fprintf(tw, "\t%d", x)
						} else {
							fmt.Fprint(tw, "\t-")
						}
					}
					fmt.Fprintln(tw)
				}
			})
		}
	case ctl.CmdHFI:
		var v ctl.HFIStatus
		if v, err = c.HFI(ctx); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				ext := ""
				if v.Extended {
					ext = " (extended)"
				}
				fmt.Fprintf(tw, "node\t%s\nlid\t%s%s\nstate\t%s\nlisten\t%s\nverify_icrc\t%v\nbusy_poll\t%s\n", v.Node, v.LID, ext, v.State, v.Listen, v.VerifyICRC, v.BusyPoll)
				if v.FabricManager != "" {
					fmt.Fprintf(tw, "fabric_manager\t%s\n", v.FabricManager)
				}
				if v.FabricManagerError != "" {
					fmt.Fprintf(tw, "fabric_manager_error\t%s\n", v.FabricManagerError)
				}
				for _, c := range v.Counters {
					unit := ""
					if c.Name == "PortXmitData" || c.Name == "PortRcvData" {
						unit = " (8-byte units, as OPA counts them)"
					}
					fmt.Fprintf(tw, "%s\t%d%s\n", c.Name, c.Value, unit)
				}
			})
		}
	case ctl.CmdPath:
		// vnicd's answer or opafm's: printed as it comes (generic).
		var args ctl.PathArgs
		switch len(rest) {
		case 1:
			args = ctl.PathArgs{LID: rest[0]}
		case 2:
			args = ctl.PathArgs{SLID: rest[0], DLID: rest[1]}
		default:
			fmt.Fprintln(stderr, "vnicctl: path takes a LID or node name (vnicd), or two (opafm: from, to)")
			return 2
		}
		err = generic(ctx, c, cmd, args, stdout, *asJSON)
	case ctl.CmdCommands:
		var v []string
		if v, err = c.Commands(ctx); err == nil {
			err = show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
				for _, name := range v {
					switch name {
					case ctl.CmdVNICAdd, ctl.CmdVNICDel:
						name += "\t(vnicctl vnic " + vnicSub(name) + ")"
					case ctl.CmdVNICGC:
						name += "\t(vnic-cni's GC)"
					}
					fmt.Fprintln(tw, name)
				}
			})
		}
	case ctl.CmdVersion:
		// vnicctl's build, and the daemon's: the daemon's may be older
		// than this vnicctl, and not answer (exit 1 after vnicctl's line).
		var daemon ctl.BuildStatus
		daemon, err = c.Version(ctx)
		self := ctl.ReadBuildStatus()
		v := map[string]any{"vnicctl": self}
		if err == nil {
			v["daemon"] = daemon
		}
		if e := show(stdout, *asJSON, v, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "vnicctl\t%s\n", self.Build)
			if err == nil {
				fmt.Fprintf(tw, "%s\t%s\n", dash(daemon.Program), daemon.Build)
			}
		}); err == nil {
			err = e
		}
	case cmdVNIC:
		err = generic(ctx, c, vnicName, vnicArgs, stdout, *asJSON)
	default:
		// fabric, vesws, reload, and whatever else the daemon (vnicd or
		// opafm) answers: printed in the order the daemon wrote, since
		// their shapes differ between the two.
		err = generic(ctx, c, cmd, nil, stdout, *asJSON)
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

// generic sends cmd and prints the answer as a table (or JSON) without
// knowing its type.
func generic(ctx context.Context, c *ctl.Client, cmd string, args any, w io.Writer, asJSON bool) error {
	var raw json.RawMessage
	if err := c.Call(ctx, cmd, args, &raw); err != nil {
		return err
	}
	if asJSON {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	}
	return renderTable(w, raw)
}

func defaultSocket() (string, error) {
	matches, _ := filepath.Glob(filepath.Join(socketDir, "*.sock"))
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("%w in %s; is vnicd running? (--socket PATH)", errNoDaemon, socketDir)
	}
	return "", fmt.Errorf("several daemon sockets in %s, choose one with --socket: %s", socketDir, strings.Join(matches, " "))
}
