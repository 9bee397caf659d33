package main

// The kv-bulkload input of shared/BENCH-SPEC.md (mirrors crates/sluice-bench/src/gen.rs).

import (
	"encoding/binary"
	"math/bits"
)

const (
	seedPerm = 0x5EED000000000001
	seedKey  = 0xA5A5A5A55A5A5A5A
	seedVal  = 0x0123456789ABCDEF
	seedRead = 0x0BAD5EED0BAD5EED

	keyLen   = 16
	valueLen = 100
	recLen   = keyLen + valueLen
)

// splitmix64 is the SplitMix64 finalizer (wrapping uint64 arithmetic).
func splitmix64(x uint64) uint64 {
	z := x + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// permutation is a bijection of 0..n: a 4-round Feistel network over the next even bit
// width, with cycle walking.
type permutation struct {
	n    uint64
	half uint
	mask uint64
}

func newPermutation(n uint64) permutation {
	m := n
	if m < 2 {
		m = 2
	}
	b := uint(bits.Len64(m - 1))
	if b < 2 {
		b = 2
	}
	b += b & 1
	half := b / 2
	return permutation{n: n, half: half, mask: (uint64(1) << half) - 1}
}

func (p permutation) apply(i uint64) uint64 {
	x := i
	for {
		l, r := x>>p.half, x&p.mask
		for k := uint64(0); k < 4; k++ {
			l, r = r, l^(splitmix64(r^(seedPerm+k))&p.mask)
		}
		x = (l << p.half) | r
		if x < p.n {
			return x
		}
	}
}

// keyOf writes the 16-byte key of logical row p into out.
func keyOf(p uint64, out []byte) {
	binary.BigEndian.PutUint64(out[0:8], p)
	binary.BigEndian.PutUint64(out[8:16], splitmix64(p^seedKey))
}

// valueOf writes the 100-byte value of logical row p into out.
func valueOf(p uint64, out []byte) {
	var buf [104]byte
	for j := uint64(0); j < 13; j++ {
		binary.LittleEndian.PutUint64(buf[8*j:], splitmix64(p*13+j+seedVal))
	}
	copy(out[:valueLen], buf[:valueLen])
}

// readRow is the logical row read by read number i.
func readRow(i, n uint64) uint64 {
	return splitmix64(i^seedRead) % n
}

// sortedInput is sluice-bench's sorted_input: row i (key BE64(i) ‖ BE64(splitmix64(i^KEY)),
// the spec value of i), in key order.
func sortedInput(n uint64) []byte {
	buf := make([]byte, n*recLen)
	for i := uint64(0); i < n; i++ {
		rec := buf[i*recLen : (i+1)*recLen]
		keyOf(i, rec[:keyLen])
		valueOf(i, rec[keyLen:])
	}
	return buf
}

// specInput is the spec stream: pair i is row perm(i), in generation (random key) order.
func specInput(n uint64) []byte {
	perm := newPermutation(n)
	buf := make([]byte, n*recLen)
	for i := uint64(0); i < n; i++ {
		p := perm.apply(i)
		rec := buf[i*recLen : (i+1)*recLen]
		keyOf(p, rec[:keyLen])
		valueOf(p, rec[keyLen:])
	}
	return buf
}
