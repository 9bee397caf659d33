package main

// ingest-under-load (bench/WORKLOADS.md), as sluice-bench's ingest_under_load
// (crates/sluice-bench/src/engine.rs): paced writers' foreground latency without and with one
// external-SST ingest per second.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

const (
	// iulRowsPerFile are the spec rows in each external SST.
	iulRowsPerFile = 20_000
	// iulWriters is the number of paced writer goroutines.
	iulWriters = 2
)

// sluicePercentiles returns p50/p99/p99.9/p99.99 of lat (ns) in µs, picked as sluice-bench's
// Latencies::summary does: sorted[min(floor(len*q), len-1)]; nil when empty. Sorts lat.
func sluicePercentiles(lat []int64) map[string]any {
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	p := func(q float64) float64 {
		i := min(int(float64(len(lat))*q), len(lat)-1)
		return float64(lat[i]) / 1e3
	}
	return map[string]any{"p50": p(0.50), "p99": p(0.99), "p999": p(0.999), "p9999": p(0.9999),
		"max": float64(lat[len(lat)-1]) / 1e3}
}

// sleepUntil blocks the calling goroutine's OS thread in nanosleep(2) until t, as Rust's
// std::thread::sleep (sluice-bench's pacing) does. time.Sleep will not do here: when the Go
// scheduler is idle it waits for timers in epoll_wait, whose timeout is in whole milliseconds,
// so a sub-millisecond sleep lasts about 1 ms (on the bench machine time.Sleep(400µs) overshot by
// ~700 µs, nanosleep by ~80 µs), and with latency counted from each op's scheduled start that
// would add most of a millisecond to every op.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(int64(d))
		_ = syscall.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}

// pacedWriters mirrors sluice-bench's paced_writers: iulWriters goroutines putting
// "w" ‖ key(read(i)) → value(read(i)) at rate puts/s in total for secs; goroutine t does ops
// j = 0..rate*secs/2, op j scheduled at start + j*(2/rate s), i = offset + t*perThread + j.
// Each op's latency (ns) runs from its scheduled start to the end of its Set.
func pacedWriters(db *pebble.DB, rate, secs, n, offset uint64) ([]int64, error) {
	perThread := rate * secs / iulWriters
	interval := time.Duration(1_000_000_000 * iulWriters / max(rate, 1))
	lats := make([][]int64, iulWriters)
	errs := make([]error, iulWriters)
	var wg sync.WaitGroup
	for t := uint64(0); t < iulWriters; t++ {
		wg.Add(1)
		go func(t uint64) {
			defer wg.Done()
			lat := make([]int64, 0, perThread)
			key := make([]byte, 1+keyLen)
			key[0] = 'w'
			val := make([]byte, valueLen)
			start := time.Now()
			for j := uint64(0); j < perThread; j++ {
				scheduled := start.Add(time.Duration(j) * interval)
				sleepUntil(scheduled)
				i := offset + t*perThread + j
				p := readRow(i, n)
				keyOf(p, key[1:])
				valueOf(p, val)
				if err := db.Set(key, val, pebble.NoSync); err != nil {
					errs[t] = fmt.Errorf("set: %w", err)
					return
				}
				lat = append(lat, time.Since(scheduled).Nanoseconds())
			}
			lats[t] = lat
		}(t)
	}
	wg.Wait()
	all := make([]int64, 0, perThread*iulWriters)
	for t := range lats {
		if errs[t] != nil {
			return nil, errs[t]
		}
		all = append(all, lats[t]...)
	}
	return all, nil
}

// writeIngestFile writes rows j*iulRowsPerFile..(j+1)*iulRowsPerFile with keys
// prefix ‖ key(row) into one SST at path.
func writeIngestFile(path string, j uint64, prefix byte, wo sstable.WriterOptions) error {
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := newSSTWriter(f, wo)
	key := make([]byte, 1+keyLen)
	key[0] = prefix
	val := make([]byte, valueLen)
	for r := j * iulRowsPerFile; r < (j+1)*iulRowsPerFile; r++ {
		keyOf(r, key[1:])
		valueOf(r, val)
		if err := w.Set(key, val); err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

func runIngestUnderLoad(a args, base string, out *bufio.Writer) error {
	n, rate, secs := a.n, a.rate, a.seconds
	for round := 0; round < a.rounds; round++ {
		dir := filepath.Join(base, fmt.Sprintf("pebble-anchor-%d-%d", os.Getpid(), round))
		_ = os.RemoveAll(dir)
		staging := filepath.Join(dir, "staging")
		if err := os.MkdirAll(staging, 0o755); err != nil {
			return err
		}
		opts := engineOptions()
		// Write stalls (Pebble's, e.g. too many memtables or L0 sublevels), for parity with
		// sluice-bench's stalls / stall_micros.
		var stallMu sync.Mutex
		var stalls int
		var stallBegin time.Time
		var stallTime time.Duration
		opts.EventListener.WriteStallBegin = func(pebble.WriteStallBeginInfo) {
			stallMu.Lock()
			stalls++
			stallBegin = time.Now()
			stallMu.Unlock()
		}
		opts.EventListener.WriteStallEnd = func() {
			stallMu.Lock()
			if !stallBegin.IsZero() {
				stallTime += time.Since(stallBegin)
				stallBegin = time.Time{}
			}
			stallMu.Unlock()
		}
		// --- untimed: the external files, in the table format of a FormatNewest DB.
		format := pebble.FormatNewest.MaxTableFormat()
		wo := writerOptions(opts, format)
		files := make([]string, 0, secs)
		for j := uint64(0); j < secs; j++ {
			prefix := byte('w')
			if j%2 == 1 {
				prefix = 'x'
			}
			p := filepath.Join(staging, fmt.Sprintf("%04d.sst", j))
			if err := writeIngestFile(p, j, prefix, wo); err != nil {
				return err
			}
			files = append(files, p)
		}
		// The same cache state in every engine: each staged file read once, untimed.
		if err := warmFiles(files); err != nil {
			return err
		}
		e := &engine{path: filepath.Join(dir, "db")}
		db, err := pebble.Open(e.path, opts)
		if err != nil {
			return err
		}
		e.db = db
		runErr := func() error {
			// --- phase A: writers alone.
			without, err := pacedWriters(db, rate, secs, n, 0)
			if err != nil {
				return err
			}
			// --- phase B: writers + one ingest per second.
			var ingestMs []float64
			var ingestErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				start := time.Now()
				for j, f := range files {
					sleepUntil(start.Add(time.Duration(j) * time.Second))
					t := time.Now()
					if err := db.Ingest(context.Background(), []string{f}); err != nil {
						ingestErr = fmt.Errorf("ingest %s: %w", f, err)
						return
					}
					ingestMs = append(ingestMs, float64(time.Since(t).Nanoseconds())/1e6)
				}
			}()
			with, werr := pacedWriters(db, rate, secs, n, rate*secs)
			<-done
			if werr != nil {
				return werr
			}
			if ingestErr != nil {
				return ingestErr
			}
			pa, pb := sluicePercentiles(without), sluicePercentiles(with)
			num := func(m map[string]any, def float64) float64 {
				if v, ok := m["p9999"].(float64); ok {
					return v
				}
				return def
			}
			ratio := num(pb, 0) / max(num(pa, 1), 1e-9)
			stallMu.Lock()
			st, stUs := stalls, stallTime.Microseconds()
			stallMu.Unlock()
			line := map[string]any{"workload": "ingest-under-load", "engine": "pebble", "round": round,
				"params": withParams(tableParams(opts), map[string]any{"rate": rate, "seconds": secs, "writers": iulWriters,
					"rows_per_file": iulRowsPerFile, "n": n,
					"ingest":     "db.Ingest, one file per call (hard-linked; flushable ingest when it overlaps the memtable)",
					"sst_writer": "sstable.NewWriter, writer options of the DB (" + format.String() + ")",
					"wal":        true, "sync": false, "write_options": "pebble.NoSync",
					"compaction_concurrency": "1..2 (CompactionConcurrencyRange; flushes run separately)",
					"latency":                "ns from each op's scheduled start to the end of its Set; percentiles as sluice-bench (sorted[min(floor(len*q), len-1)])",
					"pacing":                 "writers sleep in nanosleep(2) (syscall.Nanosleep), as Rust's thread::sleep; time.Sleep has ~1 ms resolution when the scheduler is idle",
					"stalls_source":          "EventListener WriteStallBegin/WriteStallEnd",
					"pebble":                 pebbleVersion()}),
				"latency_us_without": pa, "latency_us_with": pb, "p9999_ratio": ratio,
				"ingest_ms": ingestMs, "stalls": st, "stall_micros": stUs,
				"files":        e.sstFiles(),
				"peak_rss_kib": peakRSSKiB()}
			return writeLine(out, line)
		}()
		if err := db.Close(); err != nil && runErr == nil {
			runErr = err
		}
		if runErr != nil {
			return runErr
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}
