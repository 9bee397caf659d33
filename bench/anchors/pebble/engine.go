package main

// The engine workloads of bench/WORKLOADS.md (fillseq, fillrandom, overwrite, readrandom,
// seekrandom, block_writer) through Pebble's normal write path: Set/Delete one key at a time,
// WAL on, pebble.NoSync.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

const (
	// kvBytes are the user bytes of one key-value put (16-byte key + 100-byte value).
	kvBytes = recLen
	// txnLen is the length of txn(i) = "\x00txn/" ‖ BE64(2^64-1-i).
	txnLen = 13
	// bwOpBytes are block_writer's user bytes per op: put(txn, 8 B) + put(key, value) +
	// delete(txn).
	bwOpBytes = txnLen + 8 + kvBytes + txnLen
	l0Poll    = 20 * time.Millisecond
	// settleTimeout bounds the wait for flushes and compactions to finish.
	settleTimeout = 30 * time.Minute
)

func isEngineWorkload(w string) bool {
	switch w {
	case "fillseq", "fillrandom", "fillrandom-sync", "overwrite", "readrandom", "seekrandom",
		"block_writer", "ingest-under-load":
		return true
	}
	return false
}

// engineOptions: no compression, Bloom 10 bits/key (table filter), 4 KiB blocks, 64 MiB
// memtable, WAL on, ~64 MiB target files on every level, compaction concurrency 1..2.
func engineOptions() *pebble.Options {
	o := &pebble.Options{
		FormatMajorVersion:         pebble.FormatNewest,
		MemTableSize:               memTableBytes,
		CacheSize:                  pebbleCacheBytes,
		Logger:                     quietLogger{},
		CompactionConcurrencyRange: func() (int, int) { return 1, 2 },
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = 4096
		o.Levels[i].IndexBlockSize = indexBlockBytes
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = pebble.TableFilter
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	for i := range o.TargetFileSizes {
		o.TargetFileSizes[i] = 64 << 20
	}
	// As Sluice's flush_split_bytes (Pebble's own default, 2 x its 2 MiB L0 target file size;
	// EnsureDefaults would derive 128 MiB from the 64 MiB target above and flush one wide file
	// per memtable) and its L0 stop trigger (Sluice: 36 sublevels; RocksDB: 36 L0 files).
	o.FlushSplitBytes = 4 << 20
	o.L0StopWritesThreshold = 36
	o.EnsureDefaults()
	return o
}

type engine struct {
	db   *pebble.DB
	path string
}

// bgBytes are the bytes written by flushes and by compactions so far.
type bgBytes struct{ flush, compaction uint64 }

func (e *engine) bgBytes() bgBytes {
	m := e.db.Metrics()
	var b bgBytes
	for i := range m.Levels {
		l := &m.Levels[i]
		b.flush += l.TableBytesFlushed + l.BlobBytesFlushed
		b.compaction += l.TableBytesCompacted + l.BlobBytesCompacted
	}
	return b
}

// shape is an LSM shape sample (or the maxima of several): L0 sublevels, L0 files and read
// amplification (L0 sublevels + non-empty levels >= 1: Metrics.ReadAmp).
type shape struct{ sublevels, files, readAmp int64 }

// put writes read_amp, max_l0_files and max_l0_sublevels into a result line.
func (s shape) put(line map[string]any) {
	line["read_amp"], line["max_l0_files"], line["max_l0_sublevels"] = s.readAmp, s.files, s.sublevels
}

// maxWith is the larger of each figure.
func (s shape) maxWith(o shape) shape {
	return shape{max(s.sublevels, o.sublevels), max(s.files, o.files), max(s.readAmp, o.readAmp)}
}

func (e *engine) l0() shape {
	m := e.db.Metrics()
	return shape{int64(m.Levels[0].Sublevels), m.Levels[0].TablesCount, int64(m.ReadAmp())}
}

// settle optionally flushes the memtable, then waits until no flush or compaction is scheduled,
// running or waiting to be picked (three idle polls in a row, 10 ms apart). Pebble may keep
// small immutable memtables unflushed (it waits until they add up to half a memtable); that
// is not pending work.
func (e *engine) settle(flush bool) (float64, error) {
	t := time.Now()
	if flush {
		if err := e.db.Flush(); err != nil {
			return 0, err
		}
	}
	for idle := 0; idle < 3; {
		m := e.db.Metrics()
		waiting, _ := e.db.GetWaitingCompaction()
		if m.Flush.NumInProgress == 0 && m.Compact.NumInProgress == 0 && !waiting {
			idle++
		} else {
			idle = 0
		}
		if time.Since(t) > settleTimeout {
			return 0, fmt.Errorf("flushes/compactions still running after %v", settleTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(t).Seconds(), nil
}

// withL0Sampler runs f while a goroutine polls the LSM shape every 20 ms; returns the maxima
// seen.
func (e *engine) withL0Sampler(f func() error) (m shape, err error) {
	var mu sync.Mutex
	sample := func() {
		s := e.l0()
		mu.Lock()
		m = shape{max(m.sublevels, s.sublevels), max(m.files, s.files), max(m.readAmp, s.readAmp)}
		mu.Unlock()
	}
	sample()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(l0Poll)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				sample()
			}
		}
	}()
	err = f()
	close(stop)
	<-done
	sample()
	return m, err
}

func (e *engine) sstFiles() int {
	ents, err := os.ReadDir(e.path)
	if err != nil {
		return 0
	}
	n := 0
	for _, d := range ents {
		if strings.HasSuffix(d.Name(), ".sst") {
			n++
		}
	}
	return n
}

// puts does count Sets of (key(k), value(v)) for (k, v) = rows(i); per-put latencies (ns) are
// appended to *lat if lat is not nil. Returns the phase's seconds.
func puts(db *pebble.DB, count uint64, rows func(uint64) (uint64, uint64), lat *[]int64) (float64, error) {
	return putsWith(db, count, rows, lat, pebble.NoSync)
}

// putsWith is puts with the given write options.
func putsWith(db *pebble.DB, count uint64, rows func(uint64) (uint64, uint64), lat *[]int64,
	wo *pebble.WriteOptions) (float64, error) {
	key := make([]byte, keyLen)
	val := make([]byte, valueLen)
	t := time.Now()
	for i := uint64(0); i < count; i++ {
		k, v := rows(i)
		keyOf(k, key)
		valueOf(v, val)
		s := time.Now()
		if err := db.Set(key, val, wo); err != nil {
			return 0, err
		}
		if lat != nil {
			*lat = append(*lat, time.Since(s).Nanoseconds())
		}
	}
	return time.Since(t).Seconds(), nil
}

func latencyJSON(lat []int64) map[string]any {
	slices.Sort(lat)
	return map[string]any{"p50": percentileUs(lat, 0.50), "p99": percentileUs(lat, 0.99),
		"p999": percentileUs(lat, 0.999), "p9999": percentileUs(lat, 0.9999),
		"max": float64(slices.Max(append(lat, 0))) / 1e3}
}

func writeAmpJSON(before, after bgBytes, userBytes uint64) (float64, map[string]any) {
	flush, comp := after.flush-before.flush, after.compaction-before.compaction
	wa := 0.0
	if userBytes > 0 {
		wa = float64(flush+comp) / float64(userBytes)
	}
	return wa, map[string]any{"flush": flush, "compaction": comp, "user": userBytes}
}

func txnKey(i uint64, out []byte) {
	copy(out, "\x00txn/")
	binary.BigEndian.PutUint64(out[5:txnLen], math.MaxUint64-i)
}

func writeLine(out *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out.Write(b)
	out.WriteByte('\n')
	return out.Flush()
}

func runEngine(a args, base string, out *bufio.Writer) error {
	n := a.n
	perm := newPermutation(n)
	randomRow := func(i uint64) (uint64, uint64) { p := perm.apply(i); return p, p }
	for round := 0; round < a.rounds; round++ {
		dir := filepath.Join(base, fmt.Sprintf("pebble-anchor-%d-%d", os.Getpid(), round))
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		e := &engine{path: filepath.Join(dir, "db")}
		opts := engineOptions()
		db, err := pebble.Open(e.path, opts)
		if err != nil {
			return err
		}
		e.db = db
		params := withParams(tableParams(opts), map[string]any{"n": n,
			"target_file_mib": 64, "compaction_concurrency": "1..2 (CompactionConcurrencyRange; flushes run separately)",
			"compaction_threads": "1 flush + up to 2 concurrent compactions (Pebble v2.1 has no subcompactions)",
			"wal":                true, "sync": false, "write_options": "pebble.NoSync",
			"wal_writes":       "NoSync: records go to the WAL writer's user-space buffer, written by its flush loop (not one write(2) per batch)",
			"table_format":     db.TableFormat().String(),
			"write_amp_source": "db.Metrics(): sum over levels of TableBytesFlushed+TableBytesCompacted (+blob bytes, 0 here); WAL not counted",
			"read_amp_source":  "max db.Metrics().ReadAmp() (L0 sublevels + non-empty levels >= 1), polled every 20 ms during the timed phase"})
		seconds := map[string]any{}
		line := map[string]any{"workload": a.workload, "engine": "pebble", "round": round}
		var runErr error
		switch a.workload {
		case "fillseq", "fillrandom", "fillrandom-sync", "overwrite":
			runErr = func() error {
				lat := make([]int64, 0, n)
				rows := randomRow
				if a.workload == "fillseq" {
					rows = func(i uint64) (uint64, uint64) { return i, i }
				}
				if a.workload == "overwrite" {
					s, err := puts(db, n, randomRow, nil)
					if err != nil {
						return err
					}
					seconds["setup_fill"] = s
					if seconds["setup_wait"], err = e.settle(false); err != nil {
						return err
					}
					rows = func(i uint64) (uint64, uint64) { r := readRow(i, n); return r, r ^ 1 }
				}
				wo := pebble.NoSync
				if a.workload == "fillrandom-sync" {
					// Each put synced to the WAL (equal durability in every engine).
					wo = pebble.Sync
					params["sync"] = true
					params["wal_writes"] = "WAL record written and fdatasync'd per Set (pebble.Sync)"
				}
				before := e.bgBytes()
				var secs float64
				maxShape, err := e.withL0Sampler(func() (err error) {
					secs, err = putsWith(db, n, rows, &lat, wo)
					return err
				})
				if err != nil {
					return err
				}
				seconds["puts"] = secs
				if seconds["flush_wait"], err = e.settle(true); err != nil {
					return err
				}
				wa, wb := writeAmpJSON(before, e.bgBytes(), n*kvBytes)
				params["write_amp_method"] = "(flush+compaction bytes from the start of the timed puts until flushed and compactions done) / (n x 116 B)"
				line["ops_per_s"] = float64(n) / secs
				line["mb_per_s"] = float64(n*kvBytes) / 1e6 / secs
				line["latency_us"] = latencyJSON(lat)
				line["write_amp"], line["write_bytes"] = wa, wb
				maxShape.put(line)
				return nil
			}()

		case "readrandom", "seekrandom":
			runErr = func() error {
				reads := a.reads
				params["reads"] = reads
				before := e.bgBytes()
				s, err := puts(db, n, randomRow, nil)
				if err != nil {
					return err
				}
				seconds["setup_fill"] = s
				if seconds["setup_flush_wait"], err = e.settle(true); err != nil {
					return err
				}
				wa, wb := writeAmpJSON(before, e.bgBytes(), n*kvBytes)
				params["write_amp_method"] = "of the setup: (flush+compaction bytes of fillrandom + flush + compactions) / (n x 116 B)"
				// The same LSM shape and cache state in every engine before the reads: one full
				// manual compaction, then every file read once (both untimed).
				tc := time.Now()
				if err := db.Compact(context.Background(), []byte{}, bytes.Repeat([]byte{0xff}, 32), true); err != nil {
					return err
				}
				if _, err := e.settle(false); err != nil {
					return err
				}
				seconds["setup_compact"] = time.Since(tc).Seconds()
				tw := time.Now()
				if err := warmDir(e.path); err != nil {
					return err
				}
				seconds["setup_warm"] = time.Since(tw).Seconds()
				params["setup"] = "fillrandom, flush, wait for compactions, full db.Compact, read every file once"
				lat := make([]int64, 0, reads)
				key := make([]byte, keyLen)
				val := make([]byte, valueLen)
				var secs float64
				bad := 0
				maxShape, err := e.withL0Sampler(func() error {
					t := time.Now()
					if a.workload == "readrandom" {
						for i := uint64(0); i < reads; i++ {
							r := readRow(i, n)
							keyOf(r, key)
							valueOf(r, val)
							s := time.Now()
							v, closer, err := db.Get(key)
							ok := err == nil && bytes.Equal(v, val)
							if err == nil {
								closer.Close()
							} else if !errors.Is(err, pebble.ErrNotFound) {
								return err
							}
							lat = append(lat, time.Since(s).Nanoseconds())
							if !ok {
								bad++
							}
						}
					} else {
						// One iterator for all seeks (the DB does not change during the phase).
						it, err := db.NewIter(nil)
						if err != nil {
							return err
						}
						for i := uint64(0); i < reads; i++ {
							r := readRow(i, n)
							keyOf(r, key)
							valueOf(r, val)
							s := time.Now()
							ok := it.SeekGE(key) && bytes.Equal(it.Key(), key) && bytes.Equal(it.Value(), val)
							lat = append(lat, time.Since(s).Nanoseconds())
							if !ok {
								bad++
							}
						}
						if err := errors.Join(it.Error(), it.Close()); err != nil {
							return err
						}
					}
					secs = time.Since(t).Seconds()
					return nil
				})
				if err != nil {
					return err
				}
				if bad > 0 {
					return fmt.Errorf("%d of %d reads did not return their key's value", bad, reads)
				}
				seconds["reads"] = secs
				if a.workload == "seekrandom" {
					params["iterator"] = "one db.NewIter(nil) reused for every seek"
				}
				params["verify"] = "each read's key and value compared with the generator's (inside the timed op)"
				line["ops_per_s"] = float64(reads) / secs
				line["mb_per_s"] = float64(reads*kvBytes) / 1e6 / secs
				line["latency_us"] = latencyJSON(lat)
				line["write_amp"], line["write_bytes"] = wa, wb
				maxShape.put(line)
				return nil
			}()

		case "block_writer":
			runErr = func() error {
				target := int(a.seconds)
				params["seconds"] = target
				if a.ops > 0 {
					params["ops_target"] = a.ops
				} else {
					params["ops_target"] = nil
				}
				markCap := target
				if a.ops > 0 {
					markCap = math.MaxInt
				}
				var runSecs float64
				params["op_user_bytes"] = bwOpBytes
				params["txn_value"] = "LE64(i)"
				before := e.bgBytes()
				perSec := make([]uint64, 0, target)
				lat := make([]int64, 0, 1<<20)
				var ops uint64
				maxShape, err := e.withL0Sampler(func() error {
					key := make([]byte, keyLen)
					val := make([]byte, valueLen)
					txn := make([]byte, txnLen)
					upper := bytes.Repeat([]byte{0xFF}, txnLen+1)
					txnVal := make([]byte, 8)
					iterOpts := &pebble.IterOptions{LowerBound: txn, UpperBound: upper}
					var doneAtMark uint64
					start := time.Now()
					nextMark := time.Second
					for i := uint64(0); ; i++ {
						txnKey(i, txn)
						copy(upper, txn)
						binary.LittleEndian.PutUint64(txnVal, i)
						p := perm.apply(i % n)
						keyOf(p, key)
						valueOf(p, val)
						s := time.Now()
						it, err := db.NewIter(iterOpts)
						if err != nil {
							return err
						}
						if it.SeekGE(txn) {
							it.Close()
							return fmt.Errorf("op %d: bounded seek found a key", i)
						}
						if err := errors.Join(it.Error(), it.Close()); err != nil {
							return err
						}
						if err := db.Set(txn, txnVal, pebble.NoSync); err != nil {
							return err
						}
						if err := db.Set(key, val, pebble.NoSync); err != nil {
							return err
						}
						if err := db.Delete(txn, pebble.NoSync); err != nil {
							return err
						}
						el := time.Since(start)
						lat = append(lat, (el - s.Sub(start)).Nanoseconds())
						// Op i finished at el: ops finished before each whole-second mark passed
						// belong to that second.
						for el >= nextMark && len(perSec) < markCap {
							k := i - doneAtMark
							doneAtMark = i
							perSec = append(perSec, k)
							if err := writeLine(out, map[string]any{"second": len(perSec), "ops": k}); err != nil {
								return err
							}
							nextMark += time.Second
						}
						if (a.ops > 0 && i+1 >= a.ops) || (a.ops == 0 && len(perSec) >= target) {
							if len(perSec) == 0 {
								perSec = append(perSec, i+1) // an --ops run under a second
							}
							ops, runSecs = i+1, el.Seconds()
							return nil
						}
					}
				})
				if err != nil {
					return err
				}
				lat = lat[:ops]
				// As sluice-bench: windows of a sixth of the seconds run, 1..10 (10 for 60 s).
				win := min(max(len(perSec)/6, 1), 10)
				params["window_seconds"] = win
				seconds["run"] = runSecs
				if seconds["flush_wait"], err = e.settle(true); err != nil {
					return err
				}
				wa, wb := writeAmpJSON(before, e.bgBytes(), ops*bwOpBytes)
				params["write_amp_method"] = "(flush+compaction bytes from the start of the run until flushed and compactions done) / (ops x 150 B)"
				mean := func(s []uint64) float64 {
					var t uint64
					for _, x := range s {
						t += x
					}
					return float64(t) / float64(len(s))
				}
				first, last := mean(perSec[:win]), mean(perSec[len(perSec)-win:])
				ratio := 0.0
				if first > 0 {
					ratio = last / first
				}
				line["ops_per_s"] = float64(ops) / runSecs
				line["latency_us"] = latencyJSON(lat)
				line["per_second_ops"] = perSec
				line["first10_ops_per_s"], line["last10_ops_per_s"], line["ratio"] = first, last, ratio
				line["write_amp"], line["write_bytes"] = wa, wb
				maxShape.put(line)
				return nil
			}()
		}
		if runErr != nil {
			_ = db.Close()
			return runErr
		}
		line["params"] = params
		line["seconds"] = seconds
		line["files"] = e.sstFiles()
		line["bytes_on_disk"] = treeBytes(e.path)
		line["peak_rss_kib"] = peakRSSKiB()
		if err := db.Close(); err != nil {
			return err
		}
		if err := writeLine(out, line); err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}
