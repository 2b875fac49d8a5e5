package vnicd

// Hooks for the external tests (package vnicd_test), which need taptest and
// so cannot live in package vnicd.

// TxBufLen is the transmit buffer size the engine uses.
const TxBufLen = txBufLen

// EncapOne runs the port's transmit decisions and encapsulation on the frame
// at buf[Headroom:Headroom+n], as the transmit goroutine does.
func (p *Port) EncapOne(buf []byte, n int) []byte {
	return p.encap(p.st.Load(), p.fwd.Load(), buf, n)
}

// RaceEnabled tells the external tests whether the race detector is on.
const RaceEnabled = raceEnabled
