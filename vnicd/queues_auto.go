package vnicd

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/opavnic/opavnic/vnicd/config"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MaxAutoQueues is the most queues node.queues "auto" picks: one per CPU
// up to this many.
const MaxAutoQueues = 4

// autoQueues is the queue count node.queues "auto" (the default) picks for
// a node with cpus CPUs whose underlay device is dev ("" when it cannot be
// told), and why, for the log. One queue per CPU, at most MaxAutoQueues;
// but one when dev is unknown, or when it or a device below it merges
// received datagrams (GRO on, as it is by default on a NIC): all of a host
// pair's datagrams share one UDP 4-tuple, so the merged run of several
// flows would be steered whole to one queue and a flow could be reordered
// (configs/README.md, node.queues). merging names the device at or below
// dev that has receive GRO on ("" when none has).
func autoQueues(cpus int, dev string, merging func(string) (string, error)) (int, string) {
	n := min(max(cpus, 1), MaxAutoQueues)
	switch {
	case n == 1:
		return 1, "one CPU"
	case dev == "":
		return 1, "the underlay device is not known (set node.underlay_interface, or a peer)"
	}
	on, err := merging(dev)
	switch {
	case err != nil:
		return 1, fmt.Sprintf("receive GRO on underlay device %s not known: %v", dev, err)
	case on != "":
		how := "has receive GRO on"
		if on != dev {
			how = fmt.Sprintf("sits on %s, which has receive GRO on", on)
		}
		return 1, fmt.Sprintf("underlay device %s %s: it merges datagrams of different flows; "+
			"for more queues turn it off (ethtool -K %s gro off) or set node.queues", dev, how, on)
	}
	return n, fmt.Sprintf("one per CPU (at most %d); underlay device %s and those below it have receive GRO off", MaxAutoQueues, dev)
}

// startProcs is GOMAXPROCS as the process started, before a daemon raised
// it for its queues.
var startProcs = runtime.GOMAXPROCS(0)

// resolveQueues returns the data plane's queue count: cfg's node.queues, or
// for "auto" (0) what autoQueues picks for the CPUs vnicd may use (its
// GOMAXPROCS before the daemon raises it for the queues: the CPUs of its
// affinity mask, or its cgroup's CPU limit if lower) and the underlay
// device (underlayLinkOf), with the reason.
func resolveQueues(cfg *config.Config) (int, string) {
	if cfg.Node.Queues > 0 {
		return cfg.Node.Queues, "node.queues"
	}
	dev := ""
	if l, err := underlayLinkOf(cfg, true); err == nil && l != nil {
		dev = l.Attrs().Name
	}
	return autoQueues(startProcs, dev, mergingBelow)
}

// underlayLinkOf is the underlay device: node.underlay_interface, or the
// one that routes to the first peer; with orFM, in managed mode and
// without peers, the one that routes to the fabric manager. nil when there
// is none of these.
func underlayLinkOf(cfg *config.Config, orFM bool) (netlink.Link, error) {
	if cfg.Node.UnderlayInterface != "" {
		return netlink.LinkByName(cfg.Node.UnderlayInterface)
	}
	var dst []byte
	switch {
	case len(cfg.Peers) > 0:
		dst = cfg.Peers[0].Addr.Addr().AsSlice()
	case orFM && cfg.Node.FabricManager.IsValid():
		dst = cfg.Node.FabricManager.Addr().AsSlice()
	default:
		return nil, nil
	}
	routes, err := netlink.RouteGet(dst)
	if err != nil || len(routes) == 0 {
		return nil, err
	}
	return netlink.LinkByIndex(routes[0].LinkIndex)
}

// maxBelow bounds the devices mergingBelow looks at.
const maxBelow = 64

// mergingBelow returns the first device, of dev and those below it in the
// caller's network namespace, that has receive GRO on (deviceGRO), or ""
// when none has: a bridge's, bond's or team's ports (the links whose master
// it is) and a VLAN's, macvlan's or ipvlan's parent, at any depth, since GRO
// merges where a device's NAPI receives, below the device that carries the
// address. A parent in another namespace cannot be asked: an error.
func mergingBelow(dev string) (string, error) {
	link, err := netlink.LinkByName(dev)
	if err != nil {
		return "", err
	}
	all, err := netlink.LinkList()
	if err != nil {
		return "", err
	}
	byIndex := make(map[int]netlink.Link, len(all))
	for _, o := range all {
		byIndex[o.Attrs().Index] = o
	}
	seen := map[int]bool{link.Attrs().Index: true}
	queue := []netlink.Link{link}
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		a := l.Attrs()
		on, err := deviceGRO(a.Name)
		if err != nil {
			return "", err
		}
		if on {
			return a.Name, nil
		}
		var below []netlink.Link
		for _, o := range all {
			if o.Attrs().MasterIndex == a.Index {
				below = append(below, o)
			}
		}
		switch l.Type() {
		case "vlan", "macvlan", "macvtap", "ipvlan", "ipvtap":
			if a.ParentIndex == 0 {
				break
			}
			if a.NetNsID >= 0 {
				return "", fmt.Errorf("%s's parent device is in another network namespace", a.Name)
			}
			p, ok := byIndex[a.ParentIndex]
			if !ok {
				return "", fmt.Errorf("%s's parent device (index %d) is not listed", a.Name, a.ParentIndex)
			}
			below = append(below, p)
		}
		for _, b := range below {
			if i := b.Attrs().Index; !seen[i] {
				if len(seen) >= maxBelow {
					return "", fmt.Errorf("more than %d devices below %s", maxBelow, dev)
				}
				seen[i] = true
				queue = append(queue, b)
			}
		}
	}
	return "", nil
}

// ethtool's legacy get of one feature flag (linux/ethtool.h, linux/sockios.h).
const (
	siocEthtool = 0x8946
	ethtoolGGRO = 0x0000002b
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct{ cmd, data uint32 }

// ifreqData is struct ifreq with ifr_data set: a name and a pointer, in the
// 40 bytes of the union's largest member.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// deviceGRO reports whether the device named dev, in the caller's network
// namespace, has receive GRO on (ethtool -k: generic-receive-offload). No
// privilege is needed.
func deviceGRO(dev string) (bool, error) {
	if len(dev) >= unix.IFNAMSIZ || dev == "" {
		return false, fmt.Errorf("%q is not an interface name", dev)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return false, err
		}
	}
	defer unix.Close(fd)
	v := ethtoolValue{cmd: ethtoolGGRO}
	var ifr ifreqData
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(&v)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), siocEthtool, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&v)
	if errno != 0 {
		return false, fmt.Errorf("ethtool ioctl on %s: %w", dev, errno)
	}
	return v.data != 0, nil
}
