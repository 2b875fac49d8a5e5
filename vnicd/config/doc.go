// Package config is vnicd's configuration: the YAML node config (Load,
// Parse: every field checked, unknown fields refused, errors that name the
// field and its line), its canonical form (Config.Marshal, Config.Summary),
// what is derived from it (the node GUID, the LID directory, the netdev of
// each vport), and the JSON arguments of vnic_add, checked as config entries
// (VNICFromArgs, ClaimFromArgs). configs/README.md documents every field.
//
// It reads files and checks values; it opens no socket and no netdev.
package config
