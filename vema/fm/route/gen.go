package route

import (
	"fmt"

	"github.com/opavnic/opavnic/encap"
)

// GUIDs of generated nodes: Intel's OUI 0x001175, then 0x00 for switches or
// 0x01 for HFIs, then a 32-bit index.
const (
	SwitchGUIDBase uint64 = 0x0011750000000000
	HFIGUIDBase    uint64 = 0x0011750100000000
)

// Fabric is a generated graph and its nodes by role.
type Fabric struct {
	*Graph
	Switches []NodeID // leaves first, then spines
	HFIs     []NodeID
}

// FatTreeSpec describes a two-level fat tree: every leaf cabled once to every
// spine, HostsPerLeaf HFIs on each leaf.
type FatTreeSpec struct {
	Leaves, Spines, HostsPerLeaf int
	// HFILIDBase is the first HFI LID (1 when 0); HFIs are numbered leaf by
	// leaf. SwitchLIDBase is the first switch LID, leaves then spines (right
	// after the HFIs when 0).
	HFILIDBase, SwitchLIDBase encap.LID
}

// FatTree builds the fat tree of spec. Leaf ports 1..HostsPerLeaf face the
// HFIs and the next Spines ports face spines 0, 1, ...; spine port l+1 faces
// leaf l. Nodes are added leaves, spines, then HFIs.
func FatTree(spec FatTreeSpec) (*Fabric, error) {
	L, S, H := spec.Leaves, spec.Spines, spec.HostsPerLeaf
	switch {
	case L < 1 || S < 0 || H < 0:
		return nil, fmt.Errorf("%w: fat tree of %d leaves, %d spines, %d hosts per leaf", ErrTopology, L, S, H)
	case L > 1 && S < 1:
		return nil, fmt.Errorf("%w: %d leaves need a spine", ErrTopology, L)
	case H+S > MaxPorts || L > MaxPorts:
		return nil, fmt.Errorf("%w: a leaf needs %d ports and a spine %d (at most %d)", ErrBadPort, H+S, L, MaxPorts)
	}
	f := &Fabric{Graph: NewGraph()}
	for range L {
		if _, err := f.addSwitch(max(H+S, 1)); err != nil {
			return nil, err
		}
	}
	for range S {
		if _, err := f.addSwitch(L); err != nil {
			return nil, err
		}
	}
	for l := range L {
		for s := range S {
			if err := f.Link(f.Switches[l], H+1+s, f.Switches[L+s], l+1); err != nil {
				return nil, err
			}
		}
		for h := range H {
			id, err := f.addHFI()
			if err != nil {
				return nil, err
			}
			if err := f.Link(f.Switches[l], h+1, id, 1); err != nil {
				return nil, err
			}
		}
	}
	if err := f.number(spec.HFILIDBase, spec.SwitchLIDBase); err != nil {
		return nil, err
	}
	return f, nil
}

// Ring builds n switches in a ring, switch i's port 1 cabled to port 2 of
// switch i+1 (mod n), with hostsPerSwitch HFIs on ports 3, 4, ... of each.
// LIDs are numbered as in FatTreeSpec.
func Ring(n, hostsPerSwitch int, hfiLIDBase, switchLIDBase encap.LID) (*Fabric, error) {
	if n < 2 || hostsPerSwitch < 0 || hostsPerSwitch+2 > MaxPorts {
		return nil, fmt.Errorf("%w: ring of %d switches with %d hosts each", ErrTopology, n, hostsPerSwitch)
	}
	f := &Fabric{Graph: NewGraph()}
	for range n {
		if _, err := f.addSwitch(2 + hostsPerSwitch); err != nil {
			return nil, err
		}
	}
	for i := range n {
		if err := f.Link(f.Switches[i], 1, f.Switches[(i+1)%n], 2); err != nil {
			return nil, err
		}
	}
	for i := range n {
		for h := range hostsPerSwitch {
			id, err := f.addHFI()
			if err != nil {
				return nil, err
			}
			if err := f.Link(f.Switches[i], 3+h, id, 1); err != nil {
				return nil, err
			}
		}
	}
	if err := f.number(hfiLIDBase, switchLIDBase); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Fabric) addSwitch(ports int) (NodeID, error) {
	id, err := f.AddSwitch(SwitchGUIDBase+uint64(len(f.Switches)), ports)
	if err == nil {
		f.Switches = append(f.Switches, id)
	}
	return id, err
}

func (f *Fabric) addHFI() (NodeID, error) {
	id, err := f.AddHFI(HFIGUIDBase + uint64(len(f.HFIs)))
	if err == nil {
		f.HFIs = append(f.HFIs, id)
	}
	return id, err
}

// number gives HFIs LIDs from hfiBase (1 when 0) and switches from swBase
// (after the HFIs when 0).
func (f *Fabric) number(hfiBase, swBase encap.LID) error {
	if hfiBase == 0 {
		hfiBase = 1
	}
	if swBase == 0 {
		swBase = hfiBase + encap.LID(len(f.HFIs))
	}
	for k, id := range f.HFIs {
		if err := f.SetLID(id, hfiBase+encap.LID(k)); err != nil {
			return err
		}
	}
	for k, id := range f.Switches {
		if err := f.SetLID(id, swBase+encap.LID(k)); err != nil {
			return err
		}
	}
	return nil
}
