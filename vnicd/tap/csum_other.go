//go:build !amd64 || purego

package tap

const hasSumWords = false

const csumChunk = 64 << 10

func sumWords([]byte) uint64 { panic("vnicd: sumWords without AVX2") }

func copySumWords(_, _ []byte) uint64 { panic("vnicd: copySumWords without AVX2") }
