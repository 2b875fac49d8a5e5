package vnicd

import (
	"cmp"
	"hash/crc32"
	"maps"
	"slices"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
