package main

import (
	"bytes"
	"cmp"
	"slices"
	"testing"
)

func TestRadixSortOrdersByPrefix(t *testing.T) {
	items := make([]ent, 1000)
	for i := range items {
		items[i] = ent{splitmix64(uint64(i)), uint32(i)}
	}
	got := radixSort(items)
	if len(got) != 1000 {
		t.Fatalf("len %d", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].k > got[i].k {
			t.Fatalf("out of order at %d", i)
		}
	}
}

// TestRadixSortIsAStableSort compares the two-goroutine sort with a stable sort by prefix, for
// prefixes that differ in one byte, in several, in none, and with repeats.
func TestRadixSortIsAStableSort(t *testing.T) {
	mix := func(i uint64) uint64 { return i*0x9E3779B97F4A7C15 ^ (i >> 7) }
	gen := func(n int, f func(uint64) uint64) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = f(uint64(i))
		}
		return out
	}
	cases := [][]uint64{
		gen(100000, mix),
		gen(100000, func(i uint64) uint64 { return mix(i) & 0x00ffff00 }),
		gen(100000, func(i uint64) uint64 { return mix(i) % 1000 }),
		gen(100000, func(i uint64) uint64 { return (mix(i) % 3) << 56 }),
		gen(1000, func(uint64) uint64 { return 7 }),
		{},
		{5, 3},
		gen(70000, func(i uint64) uint64 { return 70000 - i }),
	}
	for ci, prefixes := range cases {
		items := make([]ent, len(prefixes))
		for i, p := range prefixes {
			items[i] = ent{p, uint32(i)}
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, func(a, b ent) int { return cmp.Compare(a.k, b.k) })
		got := radixSort(items)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: not the stable order", ci)
		}
	}
}

// gatheredRecs hands back, in turn, the records at part's indices, across batch edges and in a
// last short batch.
func TestGatheredRecsMatchesDirectIndexing(t *testing.T) {
	const n = 3*gatherBatch + 17
	input := make([]byte, n*recLen)
	for i := range input {
		input[i] = byte(i*7 + i/recLen)
	}
	part := make([]ent, n)
	for j := range part {
		part[j] = ent{0, uint32((j * 7919) % n)}
	}
	rec := gatheredRecs(input, part)
	for j := range part {
		i := int(part[j].i)
		if got, want := rec(j), input[i*recLen:(i+1)*recLen]; !bytes.Equal(got, want) {
			t.Fatalf("record %d: got % x, want % x", j, got[:8], want[:8])
		}
	}
}
