package vnicd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// netnsPIDPrefix marks a namespace named by a process: "pid:1234" is the
// network namespace of process 1234 (/proc/1234/ns/net), as a container
// runtime knows it before it has a bind mount to offer.
const netnsPIDPrefix = "pid:"

// NetNSPath is the file of the network namespace spec names, in any of the
// forms NetdevConfig.NetNS takes: a name under /var/run/netns, "pid:N", or an
// absolute path (returned as it is). "" is returned for "".
func NetNSPath(spec string) string {
	switch {
	case spec == "", strings.HasPrefix(spec, "/"):
		return spec
	case strings.HasPrefix(spec, netnsPIDPrefix):
		return "/proc/" + strings.TrimPrefix(spec, netnsPIDPrefix) + "/ns/net"
	}
	return netnsDir + "/" + spec
}

// checkNetNS validates a NetdevConfig.NetNS: a name (no '/'), "pid:N" with N
// a positive decimal process ID, or an absolute path.
func checkNetNS(s string) error {
	if hasControl(s) {
		return errors.New("contains a control character")
	}
	if strings.HasPrefix(s, "/") {
		return nil
	}
	if pid, ok := strings.CutPrefix(s, netnsPIDPrefix); ok {
		n, err := strconv.ParseUint(pid, 10, 31)
		if err != nil || n == 0 || pid[0] == '0' || pid[0] == '+' {
			return fmt.Errorf("%q is not a process ID (pid:N with N a positive decimal number)", pid)
		}
		return nil
	}
	switch {
	case strings.Contains(s, "/"):
		return errors.New("must be a name (no '/') under " + netnsDir + "/, pid:N or an absolute path")
	case s == "." || s == "..":
		return errors.New("not a valid namespace name")
	case len(s) > maxNetNSName:
		return fmt.Errorf("longer than %d bytes", maxNetNSName)
	}
	return nil
}
