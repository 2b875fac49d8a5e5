package hfi

import (
	"errors"
	"strings"
	"testing"
)

// TestAmbiguousIPv6: a bare IPv6 literal is refused exactly when it also
// reads as an IPv6 address and a decimal port, and the error says how to
// write each reading.
func TestAmbiguousIPv6(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want string // a substring of the error; "" for none
	}{
		{"fd99::2:4793", "write [fd99::2]:4793 for that port, or [fd99::2:4793] for the address fd99::2:4793"},
		{"2001:db8::1:80", "reads as address 2001:db8::1 port 80"},
		{"::1:9", "reads as address ::1 port 9"},
		{"fd99::2:0", ""},            // port 0 is no port
		{"fd99::2:65536", ""},        // nor beyond 16 bits
		{"fd99::2:abcd", ""},         // hex, not a decimal port
		{"fd99::4793", ""},           // "fd99:" is no address
		{"::1", ""},                  // ":" is none either
		{"1:2:3:4:5:6:7:8", ""},      // "1:2:3:4:5:6:7" is none
		{"[fd99::2:4793]", ""},       // bracketed: the address
		{"[fd99::2]:4793", ""},       // bracketed: address and port
		{"10.0.0.1:4793", ""},        // "10.0.0.1" is not IPv6
		{"::ffff:10.0.0.1:4793", ""}, // no IPv6 address: an IPv4 part comes last
		{"fd99::2%eth0:4793", ""},    // a zone: refused elsewhere
		{"localhost:4793", ""},
	} {
		err := AmbiguousIPv6(tt.s)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tt.s, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrAmbiguousIPv6)):
			t.Errorf("%q: %v, want an ErrAmbiguousIPv6 saying %q", tt.s, err, tt.want)
		}
	}
}
