package tap

import (
	"strings"
	"testing"
)

func TestNetNSPath(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", ""},
		{"blue", "/var/run/netns/blue"},
		{"pid:1234", "/proc/1234/ns/net"},
		{"/proc/7/ns/net", "/proc/7/ns/net"},
		{"/run/netns/x", "/run/netns/x"},
	} {
		if got := NetNSPath(tc.spec); got != tc.want {
			t.Errorf("NetNSPath(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestCheckNetNS(t *testing.T) {
	for _, tc := range []struct {
		name, spec, err string
	}{
		{"name", "blue", ""},
		{"path", "/var/run/netns/blue", ""},
		{"pid", "pid:1234", ""},
		{"pid 1", "pid:1", ""},
		{"pid empty", "pid:", "not a process ID"},
		{"pid zero", "pid:0", "not a process ID"},
		{"pid leading zero", "pid:012", "not a process ID"},
		{"pid plus", "pid:+12", "not a process ID"},
		{"pid negative", "pid:-1", "not a process ID"},
		{"pid hex", "pid:0x10", "not a process ID"},
		{"pid too large", "pid:99999999999", "not a process ID"},
		{"relative path", "a/b", "no '/'"},
		{"dot", "..", "not a valid"},
		{"control", "a\nb", "control character"},
		{"long", strings.Repeat("n", 256), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckNetNS(tc.spec)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("CheckNetNS(%q) = %v, want nil", tc.spec, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("CheckNetNS(%q) = %v, want an error with %q", tc.spec, err, tc.err)
			}
		})
	}
}
