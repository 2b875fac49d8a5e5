package fm

import (
	"testing"

	"github.com/opavnic/opavnic/encap"
)

// TestLIDFromGIDPrefix: a GID in a request resolves to a port of this
// subnet only with the subnet's prefix or the link-local one (fe80::, which
// addresses the local subnet whatever its prefix); a GID of another subnet
// names no port here, an ordinary or a special one.
func TestLIDFromGIDPrefix(t *testing.T) {
	f := fullFM(t, 1, false)
	const own, other = 0xFEC0000000000001, 0xFEC0000000000002
	f.cfg.FM.SubnetPrefix = own
	var n *node
	for _, x := range f.nodes {
		n = x
	}
	gid := gidOf
	for _, tc := range []struct {
		name string
		g    encap.GID
		want encap.LID
	}{
		{"subnet prefix, port GUID", gid(own, n.portGUID), encap.LID(n.lid)},
		{"link-local, port GUID", gid(encap.DefaultSubnetPrefix, n.portGUID), encap.LID(n.lid)},
		{"another subnet, port GUID", gid(other, n.portGUID), 0},
		{"subnet prefix, special GID", encap.SpecialGID(own, 0xC123), 0xC123},
		{"link-local, special GID", encap.SpecialGID(encap.DefaultSubnetPrefix, 0xC123), 0xC123},
		{"another subnet, special GID", encap.SpecialGID(other, 0xC123), 0},
		{"another subnet, the FM's GUID", gid(other, f.cfg.FM.GUID), 0},
	} {
		if got := f.lidFromGID(tc.g); got != tc.want {
			t.Errorf("%s: %v resolves to %#x, want %#x", tc.name, tc.g, got, tc.want)
		}
	}
}
