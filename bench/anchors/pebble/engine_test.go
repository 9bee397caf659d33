package main

import (
	"bytes"
	"testing"
)

// txn(i+1) sorts before txn(i), and txn(i) lies outside [txn(i+1), txn(i+1) ‖ 0xFF).
func TestTxnKeysSortNewestFirstOutsideBounds(t *testing.T) {
	for _, i := range []uint64{0, 1, 255, 256, 1 << 40} {
		newer, older := make([]byte, txnLen), make([]byte, txnLen)
		txnKey(i+1, newer)
		txnKey(i, older)
		if !bytes.HasPrefix(newer, []byte("\x00txn/")) {
			t.Fatalf("txn(%d) = %x: bad prefix", i+1, newer)
		}
		if bytes.Compare(newer, older) >= 0 {
			t.Fatalf("txn(%d) >= txn(%d)", i+1, i)
		}
		if upper := append(append([]byte{}, newer...), 0xFF); bytes.Compare(upper, older) >= 0 {
			t.Fatalf("txn(%d) inside the bounds of txn(%d)", i, i+1)
		}
	}
}
