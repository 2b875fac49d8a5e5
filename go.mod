module github.com/opavnic/opavnic

go 1.26.0

require (
	github.com/containernetworking/cni v1.3.0
	github.com/containernetworking/plugins v1.6.2
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.50.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/alexflint/go-filemutex v1.3.0 // indirect
	github.com/coreos/go-iptables v0.8.0 // indirect
	github.com/safchain/ethtool v0.5.9 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	sigs.k8s.io/knftables v0.0.18 // indirect
)

tool github.com/containernetworking/plugins/plugins/ipam/host-local
