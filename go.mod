module github.com/opavnic/opavnic

go 1.26.0

require (
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.50.0
	gopkg.in/yaml.v3 v3.0.1
)

require go.uber.org/multierr v1.10.0 // indirect
