// Command opaswitch runs emulated Omni-Path switches (package opaswitch):
// every switch of a topology file, or the ones --switch names, each port
// on the UDP endpoint of its cable end (docs/fabric.md). The fabric
// manager's SM sweeps them, gives them LIDs and programs their tables.
//
// Usage:
//
//	opaswitch --config topology.yaml [--switch leaf1,spine1] [--log-level info]
//	opaswitch --config topology.yaml --check
//	opaswitch --fat-tree LEAVES:SPINES:HOSTS --switch-address IP --host-endpoint IP:PORT
//	opaswitch --version
//
// --fat-tree prints the topology file of a two-level fat tree (every leaf
// cabled to every spine) and exits: every switch on --switch-address, host
// i's HFI on --host-endpoint's address plus i.
//
// SIGINT and SIGTERM stop it. Exit codes: 0 clean stop, 1 runtime failure,
// 2 bad topology or flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/opavnic/opavnic/cmd/internal/cli"
	"github.com/opavnic/opavnic/hfi"
	"github.com/opavnic/opavnic/internal/buildinfo"
	"github.com/opavnic/opavnic/opaswitch"
	"github.com/opavnic/opavnic/opaswitch/topology"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("opaswitch", flag.ContinueOnError)
	flags := cli.CommonFlags(fs, "path of the topology file")
	only := fs.String("switch", "", "comma-separated names of the switches to run (default: every switch of the topology)")
	fatTree := fs.String("fat-tree", "", "print the topology of a fat tree LEAVES:SPINES:HOSTS (hosts per leaf) and exit")
	swAddr := fs.String("switch-address", "", "with --fat-tree: the address every switch listens on")
	hostEP := fs.String("host-endpoint", "", "with --fat-tree: the first host's HFI endpoint (IP:PORT); the next hosts take the next addresses")
	if hasFlag(args, "fat-tree") {
		return generate(fs, args, fatTree, swAddr, hostEP)
	}
	log, code := flags.Start(fs, args)
	if log == nil {
		return code
	}
	defer log.Sync() //nolint:errcheck
	top, err := topology.Load(*flags.Config)
	if err != nil {
		flags.ConfigError(log, "opaswitch", err)
		return 2
	}
	names, err := selected(top, *only)
	if err != nil {
		log.Error("bad --switch", zap.Error(err))
		return 2
	}
	if *flags.Check {
		fmt.Printf("%s: topology OK: %d switches, %d hosts, %d cables; this process would run %s\n",
			*flags.Config, len(top.Switches), len(top.Hosts), len(top.Cables), strings.Join(names, ", "))
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log.Info("opaswitch starting", zap.String("build", buildinfo.Read().String()), zap.String("topology", *flags.Config),
		zap.Strings("switches", names))
	var sws []*opaswitch.Switch
	closeAll := func() {
		for _, sw := range sws {
			sw.Close()
		}
	}
	for _, name := range names {
		sw, err := open(top, name)
		if err != nil {
			log.Error("cannot start", zap.String("switch", name), zap.Error(err))
			closeAll()
			return 1
		}
		sws = append(sws, sw)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(sws))
	for _, sw := range sws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sw.Run(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", sw.Name(), err)
				cancel()
			}
		}()
	}
	log.Info("opaswitch up", zap.Int("switches", len(sws)))
	wg.Wait()
	close(errs)
	var all error
	for err := range errs {
		all = errors.Join(all, err)
	}
	if all != nil {
		log.Error("stopped with an error", zap.Error(all))
		return 1
	}
	log.Info("stopped")
	return 0
}

// hasFlag reports whether args name the flag, so that --fat-tree needs no
// --config.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// selected returns the switches to run: the ones only names, or all.
func selected(top *topology.Topology, only string) ([]string, error) {
	var names []string
	if only == "" {
		for _, s := range top.Switches {
			names = append(names, s.Name)
		}
		return names, nil
	}
	for _, n := range strings.Split(only, ",") {
		if top.Switch(n) == nil {
			return nil, fmt.Errorf("the topology has no switch %q", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// open makes switch name of top with a UDP socket on each cabled port's
// endpoint.
func open(top *topology.Topology, name string) (*opaswitch.Switch, error) {
	s := top.Switch(name)
	var cables []opaswitch.Cable
	fail := func(err error) (*opaswitch.Switch, error) {
		for _, c := range cables {
			c.Transport.Close()
		}
		return nil, err
	}
	for p := 1; p <= s.NumPorts; p++ {
		peer, ok := top.Peer(topology.End{Switch: name, Port: p})
		if !ok {
			continue
		}
		tr, err := hfi.ListenUDP(s.Endpoint(p), 0)
		if err != nil {
			return fail(fmt.Errorf("port %d: %w", p, err))
		}
		cables = append(cables, opaswitch.Cable{Port: p, Transport: tr, Peer: top.Endpoint(peer)})
	}
	sw, err := opaswitch.New(opaswitch.Config{Name: s.Name, GUID: s.GUID, NumPorts: s.NumPorts, Cables: cables})
	if err != nil {
		return fail(err)
	}
	return sw, nil
}

// generate prints a fat tree's topology.
func generate(fs *flag.FlagSet, args []string, fatTree, swAddr, hostEP *string) int {
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var l, s, h int
	if n, err := fmt.Sscanf(*fatTree, "%d:%d:%d", &l, &s, &h); n != 3 || err != nil {
		fmt.Fprintf(os.Stderr, "opaswitch: --fat-tree %q: want LEAVES:SPINES:HOSTS\n", *fatTree)
		return 2
	}
	addr, err := netip.ParseAddr(*swAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "opaswitch: --switch-address %q: %v\n", *swAddr, err)
		return 2
	}
	first, err := netip.ParseAddrPort(*hostEP)
	if err != nil {
		fmt.Fprintf(os.Stderr, "opaswitch: --host-endpoint %q: %v\n", *hostEP, err)
		return 2
	}
	top, err := topology.FatTree(topology.FatTreeSpec{Leaves: l, Spines: s, HostsPerLeaf: h, SwitchAddress: addr,
		HostEndpoint: func(i int) netip.AddrPort {
			a := first.Addr()
			for range i {
				a = a.Next()
			}
			return netip.AddrPortFrom(a, first.Port())
		}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "opaswitch: %v\n", err)
		return 2
	}
	os.Stdout.Write(top.Marshal()) //nolint:errcheck
	return 0
}
