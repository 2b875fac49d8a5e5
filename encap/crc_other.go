//go:build !amd64 || purego

package encap

import "hash/crc32"

// hasVPCLMUL: the folding code is amd64 only.
const hasVPCLMUL = false

// updateIEEE is crc32.Update(crc, crc32.IEEETable, p).
func updateIEEE(crc uint32, p []byte) uint32 {
	return crc32.Update(crc, crc32.IEEETable, p)
}

// foldMin is where the amd64 code starts folding; the tests cross it here too.
const foldMin = 256
