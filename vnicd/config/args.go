package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/opavnic/opavnic/encap"
	"github.com/opavnic/opavnic/internal/yamlcfg"
	"github.com/opavnic/opavnic/vnicd/engine"
)

// maxOwner bounds the owner tag of a runtime VNIC.
const maxOwner = 512

// rawVNICAdd is vnic_add's arguments as the config checker reads them.
type rawVNICAdd struct {
	VPort       leaf `yaml:"vport"`
	VESW        leaf `yaml:"vesw"`
	PKey        leaf `yaml:"pkey"`
	EthMTU      leaf `yaml:"eth_mtu"`
	McastDLID   leaf `yaml:"mcast_dlid"`
	MAC         leaf `yaml:"mac"`
	IfName      leaf `yaml:"ifname"`
	NetNS       leaf `yaml:"netns"`
	Addresses   leaf `yaml:"addresses"`
	ConfigState leaf `yaml:"config_state"`
	Owner       leaf `yaml:"owner"`
}

// argName maps a config field path of buildVNIC to vnic_add's argument.
func argName(field string) string {
	if f, ok := strings.CutPrefix(field, "vnic.vesw."); ok {
		if f == "id" {
			return "vesw"
		}
		return f
	}
	if f, ok := strings.CutPrefix(field, "vnic.port."); ok {
		return f
	}
	return strings.TrimPrefix(field, "vnic.")
}

// decodeVNICAdd decodes vnic_add's JSON arguments (JSON is YAML) into the
// raw tree the config checker reads, refusing unknown fields.
func decodeVNICAdd(args []byte) (rawVNICAdd, error) {
	var a rawVNICAdd
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if err := yamlcfg.DecodeText(args, &a, "the arguments must be an object"); err != nil {
		// The arguments are one line of JSON (vnicctl's flags, say): the
		// field, if any, without the line.
		var e *yamlcfg.Error
		if errors.As(err, &e) && e.Field != "" {
			return a, fmt.Errorf("bad arguments: %s: %s", e.Field, e.Reason)
		}
		return a, fmt.Errorf("bad arguments: %w", err)
	}
	return a, nil
}

// VNICFromArgs checks the JSON arguments of vnic_add against the config c
// (its LID, peers and multicast groups) with the checks a vnics entry gets.
// free picks the vport when the arguments name none. What involves the
// running VNICs (a vport, vesw or ifname in use) is the caller's to check.
func (c *Config) VNICFromArgs(args []byte, free func() (uint8, bool)) (VNICConfig, string, error) {
	a, err := decodeVNICAdd(args)
	if err != nil {
		return VNICConfig{}, "", err
	}
	ck := &checker{}
	var vport uint8
	if a.VPort.Present() {
		vport = uint8(ck.Ranged(a.VPort, "vnic.vport", 0, MaxVPort, 0, false))
	} else {
		v, ok := free()
		if !ok {
			return VNICConfig{}, "", errors.New("vport: every vport 0..254 is in use")
		}
		vport = v
	}
	owner, _ := ck.Text(a.Owner, "vnic.owner")
	if len(owner) > maxOwner || hasControl(owner) {
		ck.Failf("vnic.owner", a.Owner, "longer than %d bytes or has a control character", maxOwner)
	}
	ck.Required(a.VESW, "vnic.vesw.id")
	r := rawVNIC{
		VESW: rawVESW{ID: a.VESW, PKey: a.PKey, EthMTU: a.EthMTU, McastDLID: a.McastDLID, ConfigState: a.ConfigState},
		Port: rawPort{MAC: a.MAC, IfName: a.IfName, NetNS: a.NetNS, Addresses: a.Addresses},
	}
	known := map[uint32]string{uint32(c.Node.LID): "node.lid"}
	for _, p := range c.Peers {
		known[uint32(p.LID)] = "peers"
	}
	groups := map[uint32][]uint32{}
	for _, g := range c.Multicast {
		groups[g.LID] = g.Members
	}
	v := VNICConfig{}
	if !ck.Failed() {
		v = ck.buildVNIC(&r, "vnic", vport, c.Node.LID, known, groups)
	}
	if ck.Failed() {
		return VNICConfig{}, "", fmt.Errorf("%s: %s", argName(ck.First().Field), ck.First().Reason)
	}
	return v, owner, nil
}

// ClaimRequest is vnic_add's arguments in managed mode.
type ClaimRequest struct {
	VESW      uint16
	VPort     *uint8
	PKey      *encap.PKey
	EthMTU    *uint16
	McastDLID *uint32
	Netdev    engine.NetdevConfig // IfName "" keeps the port's name
	Owner     string
}

// ClaimFromArgs checks vnic_add's JSON arguments for a claim: vesw and
// netns are required; pkey, eth_mtu and mcast_dlid, when given, are checked
// against the port the EM made; mac and config_state are the EM's to set.
func ClaimFromArgs(args []byte) (ClaimRequest, error) {
	a, err := decodeVNICAdd(args)
	if err != nil {
		return ClaimRequest{}, err
	}
	if a.MAC.Present() {
		return ClaimRequest{}, errors.New("mac: the EM sets the MACs of a managed node's ports; give the member a mac in the fabric config")
	}
	if a.ConfigState.Present() {
		return ClaimRequest{}, errors.New("config_state: the EM sets the state of a managed node's ports")
	}
	ck := &checker{}
	var r ClaimRequest
	if ck.Required(a.VESW, "vnic.vesw.id") {
		r.VESW = uint16(ck.Ranged(a.VESW, "vnic.vesw.id", 1, uint64(encap.VESWIDMask), 0, false))
	}
	if a.VPort.Present() {
		v := uint8(ck.Ranged(a.VPort, "vnic.vport", 0, MaxVPort, 0, false))
		r.VPort = &v
	}
	if a.PKey.Present() {
		v := encap.PKey(ck.Ranged(a.PKey, "vnic.vesw.pkey", 0, 0xFFFF, 0, true))
		r.PKey = &v
	}
	if a.EthMTU.Present() {
		v := uint16(ck.Ranged(a.EthMTU, "vnic.vesw.eth_mtu", engine.MinEthMTU, engine.MaxEthMTU, engine.DefaultEthMTU, false))
		r.EthMTU = &v
	}
	if a.McastDLID.Present() {
		v := ck.MulticastLID(a.McastDLID, "vnic.vesw.mcast_dlid")
		r.McastDLID = &v
	}
	r.Netdev = ck.buildNetdev(&rawPort{IfName: a.IfName, NetNS: a.NetNS, Addresses: a.Addresses}, "vnic.port", 0)
	if !a.IfName.Present() {
		r.Netdev.IfName = ""
	}
	if !ck.Failed() && r.Netdev.NetNS == "" {
		ck.Failf("vnic.port.netns", a.NetNS, "required on a managed node: a claim moves one of the EM's ports into a namespace")
	}
	owner, _ := ck.Text(a.Owner, "vnic.owner")
	if len(owner) > maxOwner || hasControl(owner) {
		ck.Failf("vnic.owner", a.Owner, "longer than %d bytes or has a control character", maxOwner)
	}
	r.Owner = owner
	if ck.Failed() {
		return ClaimRequest{}, fmt.Errorf("%s: %s", argName(ck.First().Field), ck.First().Reason)
	}
	return r, nil
}
