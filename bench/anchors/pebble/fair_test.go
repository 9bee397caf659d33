package main

import "testing"

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
