package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

func TestSpecCheckValuesN1000(t *testing.T) {
	const n = 1000
	input := specInput(n)
	seen := make([]bool, n)
	for i := 0; i < n; i++ {
		p := binary.BigEndian.Uint64(input[i*recLen:])
		if p >= n || seen[p] {
			t.Fatalf("not a permutation at %d (p=%d)", i, p)
		}
		seen[p] = true
	}
	kv := sha256.Sum256(input)
	if got, want := hex.EncodeToString(kv[:]), "d4a7cd05639e50be3c457e790d16fd4ee07906ea30a6f005a649dd5c2dcf8cdc"; got != want {
		t.Errorf("sha256(kv) = %s, want %s", got, want)
	}
	h := sha256.New()
	var k [keyLen]byte
	for i := uint64(0); i < 1000; i++ {
		keyOf(readRow(i, n), k[:])
		h.Write(k[:])
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), "cb48fd96699cd44a9065b673d3564b22dcb39b0f5046a5071c67ac65513796f0"; got != want {
		t.Errorf("sha256(reads) = %s, want %s", got, want)
	}
}

func TestPermutationSmallN(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 5, 17, 1000, 4096, 4097} {
		p := newPermutation(n)
		seen := make([]bool, n)
		for i := uint64(0); i < n; i++ {
			x := p.apply(i)
			if x >= n || seen[x] {
				t.Fatalf("n=%d: not a permutation at %d", n, i)
			}
			seen[x] = true
		}
	}
}
