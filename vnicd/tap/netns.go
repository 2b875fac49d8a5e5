package tap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// NetNSPIDPrefix marks a namespace named by a process: "pid:1234" is the
// network namespace of process 1234 (/proc/1234/ns/net), as a container
// runtime knows it before it has a bind mount to offer.
const NetNSPIDPrefix = "pid:"

// maxNetNSName bounds a namespace name (NAME_MAX).
const maxNetNSName = 255

// NetNSPath is the file of the network namespace spec names, in any of the
// forms NetdevConfig.NetNS takes: a name under /var/run/netns, "pid:N", or an
// absolute path (returned as it is). "" is returned for "".
func NetNSPath(spec string) string {
	switch {
	case spec == "", strings.HasPrefix(spec, "/"):
		return spec
	case strings.HasPrefix(spec, NetNSPIDPrefix):
		return "/proc/" + strings.TrimPrefix(spec, NetNSPIDPrefix) + "/ns/net"
	}
	return netnsDir + "/" + spec
}

// CheckNetNS validates a NetdevConfig.NetNS: a name (no '/'), "pid:N" with N
// a positive decimal process ID, or an absolute path.
func CheckNetNS(s string) error {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return errors.New("contains a control character")
	}
	if strings.HasPrefix(s, "/") {
		return nil
	}
	if pid, ok := strings.CutPrefix(s, NetNSPIDPrefix); ok {
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
