package engine

// Hooks for the external tests (package engine_test).

// TxBufLen is the transmit buffer size the engine uses.
const TxBufLen = maxTxBufLen

// TxBufLenFor is the transmit buffer size for a port whose frames are at
// most maxFrame bytes.
func TxBufLenFor(maxFrame int) int { return txBufLen(maxFrame) }

// EncapOne runs the port's transmit decisions and encapsulation on the frame
// at buf[Headroom:Headroom+n], as the transmit goroutine does.
func (p *Port) EncapOne(buf []byte, n int) []byte {
	var m macMemo
	return p.encap(p.st.Load(), p.fwd.Load(), buf, n, &m)
}
