package main

// What keeps the anchor's work equal to Sluice's and RocksDB's (issue 11): the same cache
// budget, the same file-write buffer, the same sort, the same cache state before timed reads
// and the same read-amplification count.

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

const (
	// blockCacheBytes is Sluice's default block cache (and RocksDB's, set explicitly there).
	blockCacheBytes = 32 << 20
	// memTableBytes is every engine's memtable size.
	memTableBytes = 64 << 20
	// pebbleCacheBytes: Pebble charges memtables against its block cache (up to
	// MemTableStopWritesThreshold = 2 of them), so the cache a Pebble user would size for the
	// same usable block cache is the block share plus that reservation.
	pebbleCacheBytes = blockCacheBytes + 2*memTableBytes
	// indexBlockBytes: CockroachDB's index block size. With 4 KiB Pebble would write a two-level
	// index into every 64 MiB table, where Sluice and RocksDB read one index block.
	indexBlockBytes = 256 << 10
	// fileWriteBuffer is Sluice's (and RocksDB's) file write buffer; Pebble's default writable
	// buffers 4 KiB.
	fileWriteBuffer = 1 << 20
)

// tableParams are the settings every anchor prints and bench/test_params.py compares with
// Sluice's, read back from the options the DB is opened with.
func tableParams(o *pebble.Options) map[string]any {
	bloomBits := 0
	if fp, ok := o.Levels[0].FilterPolicy.(bloom.FilterPolicy); ok {
		bloomBits = int(fp)
	}
	compression := "none"
	if c := o.Levels[0].Compression(); c != sstable.NoCompression {
		compression = c.Name
	}
	return map[string]any{"key_bytes": 16, "value_bytes": 100, "compression": compression,
		"bloom_bits": bloomBits, "filter": "table", "block_size": o.Levels[0].BlockSize,
		"index_block_size":        o.Levels[0].IndexBlockSize,
		"cache_bytes":             o.CacheSize,
		"cache_note":              "Options.CacheSize; with the WAL on, 32 MiB of blocks + 2 x 64 MiB memtable reservation (Pebble charges memtables to its cache); index and filter blocks live in this cache",
		"memtable_bytes":          o.MemTableSize,
		"flush_split_bytes":       o.FlushSplitBytes,
		"l0_stop_writes":          o.L0StopWritesThreshold,
		"intra_l0":                "where the base level is busy (its default picker)",
		"l0_trigger":              "4 L0 sublevels (L0CompactionThreshold, its default)",
		"l0_compaction_threshold": o.L0CompactionThreshold,
		"file_write_buffer":       "1 MiB (bufio around the vfs file; Pebble's default is 4 KiB)",
		"checksum":                "CRC32c (Pebble's default)",
		"background_priority":     "the process's (goroutines: Go has no per-thread priority); WAL files recycled (its default)",
		"pebble":                  pebbleVersion()}
}

// withParams adds extra's fields to a copy of base.
func withParams(base map[string]any, extra map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// bufWritable is objstorageprovider's file writable with a fileWriteBuffer-sized buffer.
type bufWritable struct {
	file vfs.File
	bw   *bufio.Writer
}

var _ objstorage.Writable = (*bufWritable)(nil)

func newBufWritable(f vfs.File) *bufWritable {
	return &bufWritable{file: f, bw: bufio.NewWriterSize(f, fileWriteBuffer)}
}

func (w *bufWritable) Write(p []byte) error {
	_, err := w.bw.Write(p)
	return err
}

func (w *bufWritable) Finish() error {
	err := w.bw.Flush()
	if err == nil {
		err = w.file.Sync()
	}
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *bufWritable) Abort() { _ = w.file.Close() }

// newSSTWriter is an sstable.Writer over f with the fileWriteBuffer-sized buffer.
func newSSTWriter(f vfs.File, wo sstable.WriterOptions) *sstable.Writer {
	return sstable.NewWriter(newBufWritable(f), wo)
}

// gatherBatch is how many records kv-bulkload's writers gather at a time (sluice-bench's
// sort::GATHER_BATCH).
const gatherBatch = 4096

// gatheredRecs returns rec(j) for j = 0, 1, 2, ... in turn (calls must come in that order):
// the records of input at the indices of part, copied a batch at a time into one reused
// buffer by a tight loop that keeps many cache misses in flight (sluice-bench's
// sort::gather). A slice it returns is valid until the call after the batch's last.
func gatheredRecs(input []byte, part []ent) func(int) []byte {
	buf := make([]byte, 0, gatherBatch*recLen)
	return func(j int) []byte {
		o := j % gatherBatch
		if o == 0 {
			buf = buf[:0]
			end := min(j+gatherBatch, len(part))
			for _, e := range part[j:end] {
				i := int(e.i)
				buf = append(buf, input[i*recLen:(i+1)*recLen]...)
			}
		}
		return buf[o*recLen : (o+1)*recLen]
	}
}

// sortName is how kv-bulkload sorts, as every engine prints it (params.sort).
const sortName = "radix sort of the BE64 key prefix, 8-bit digits: one MSD pass, then LSD passes per bucket on 2 threads"

// radixSort sorts (BE64 key prefix, record index) pairs by prefix on two goroutines, with
// sluice-bench's steps (crates/sluice-bench/src/fair.rs, radix_sort): one pass finds the bytes
// in which prefixes differ (OR ^ AND), one MSD pass scatters by the most significant of them
// into 256 buckets, and two goroutines, each with the buckets of about half the pairs, sort
// each bucket by LSD passes over the other differing bytes. Stable. Returns the sorted slice.
func radixSort(items []ent) []ent {
	n := len(items)
	or, and := uint64(0), ^uint64(0)
	for _, it := range items {
		or |= it.k
		and &= it.k
	}
	differ := or ^ and
	var digits []uint
	for d := uint(0); d < 8; d++ {
		if (differ>>(8*d))&0xff != 0 {
			digits = append(digits, d)
		}
	}
	if len(digits) == 0 {
		return items // every prefix is the same
	}
	top := digits[len(digits)-1]
	digits = digits[:len(digits)-1]
	shift := 8 * top
	var starts [257]int
	for _, it := range items {
		starts[int((it.k>>shift)&0xff)+1]++
	}
	for b := 0; b < 256; b++ {
		starts[b+1] += starts[b]
	}
	tmp := make([]ent, n)
	next := starts
	for _, it := range items {
		b := int((it.k >> shift) & 0xff)
		tmp[next[b]] = it
		next[b]++
	}
	// The bucket boundary nearest the middle: the first one at or past n / 2.
	k := 0
	for k < 256 && starts[k] < n/2 {
		k++
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sortBuckets(tmp, items, starts[k:], digits)
	}()
	sortBuckets(tmp, items, starts[:k+1], digits)
	wg.Wait()
	return items
}

// sortBuckets sorts each bucket of src (between consecutive bounds) by the byte digits,
// least significant first, leaving the sorted pairs at the same offsets of dst.
func sortBuckets(src, dst []ent, bounds []int, digits []uint) {
	for w := 0; w+1 < len(bounds); w++ {
		lo, hi := bounds[w], bounds[w+1]
		from, to := src[lo:hi], dst[lo:hi]
		inSrc := true
		for _, d := range digits {
			shift := 8 * d
			var at [257]int
			for _, it := range from {
				at[int((it.k>>shift)&0xff)+1]++
			}
			same := false
			for _, c := range at[1:] {
				if c == len(from) {
					same = true
					break
				}
			}
			if same {
				continue // one value of this byte in the bucket
			}
			for b := 0; b < 256; b++ {
				at[b+1] += at[b]
			}
			for _, it := range from {
				b := int((it.k >> shift) & 0xff)
				to[at[b]] = it
				at[b]++
			}
			from, to = to, from
			inSrc = !inSrc
		}
		if inSrc {
			copy(dst[lo:hi], src[lo:hi])
		}
	}
}

// ent is one record's BE64 key prefix and index.
type ent struct {
	k uint64
	i uint32
}

// warmDir reads every regular file under dir once, so timed reads start from the page cache
// in every engine.
func warmDir(dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted by a background job meanwhile
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return warmFiles(files)
}

// warmFiles reads each file once in 1 MiB reads.
func warmFiles(files []string) error {
	buf := make([]byte, 1<<20)
	for _, p := range files {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted by a background job meanwhile
		}
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
