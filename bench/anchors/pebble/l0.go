package main

// The L0 workloads of issue 15 (bench/WORKLOADS.md, "L0 under pressure"), as sluice-bench's
// l0.rs runs them: l0-fillrandom and l0-fillrandom-widefile (the spec stream in write batches
// of 1,000 pairs; widefile adds two puts at the keyspace's ends after every batch) and
// l0-ingest-random (50k-pair SSTs spanning the keyspace, ingested one after another beside two
// paced writers).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

const (
	l0Batch       = 1_000
	l0RowsPerFile = 50_000
	l0WriterRate  = 10_000
)

func isL0Workload(w string) bool {
	return w == "l0-fillrandom" || w == "l0-fillrandom-widefile" || w == "l0-ingest-random"
}

// stallTracker counts Pebble's write stalls (EventListener WriteStallBegin/End).
type stallTracker struct {
	mu    sync.Mutex
	count int
	begin time.Time
	total time.Duration
	most  time.Duration
}

func (s *stallTracker) attach(o *pebble.Options) {
	o.EventListener.WriteStallBegin = func(pebble.WriteStallBeginInfo) {
		s.mu.Lock()
		s.count++
		s.begin = time.Now()
		s.mu.Unlock()
	}
	o.EventListener.WriteStallEnd = func() {
		s.mu.Lock()
		if !s.begin.IsZero() {
			d := time.Since(s.begin)
			s.total += d
			s.most = max(s.most, d)
			s.begin = time.Time{}
		}
		s.mu.Unlock()
	}
}

func (s *stallTracker) put(line map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line["stalls"], line["stall_micros"] = s.count, s.total.Microseconds()
	line["stall_max_micros"] = s.most.Microseconds()
}

// settleSampled flushes and waits for compactions while sampling the LSM shape.
func (e *engine) settleSampled() (shape, error) {
	return e.withL0Sampler(func() error { _, err := e.settle(true); return err })
}

func l0Finish(line map[string]any, e *engine, before bgBytes, user uint64, st *stallTracker) {
	after := e.bgBytes()
	line["write_amp"] = float64(after.flush+after.compaction-before.flush-before.compaction) / float64(max(user, 1))
	line["user_bytes"] = user
	st.put(line)
	line["bytes_on_disk"] = treeBytes(e.path)
	line["peak_rss_kib"] = peakRSSKiB()
}

func l0Fill(n uint64, widefile bool, dir string) (map[string]any, error) {
	opts := engineOptions()
	st := &stallTracker{}
	st.attach(opts)
	e := &engine{path: filepath.Join(dir, "db")}
	db, err := pebble.Open(e.path, opts)
	if err != nil {
		return nil, err
	}
	e.db = db
	defer db.Close()
	perm := newPermutation(n)
	before := e.bgBytes()
	lo, hi := make([]byte, keyLen), bytes.Repeat([]byte{0xff}, keyLen)
	key, val := make([]byte, keyLen), make([]byte, valueLen)
	lat := make([]int64, 0, n/l0Batch+1)
	var user uint64
	start := time.Now()
	shape, err := e.withL0Sampler(func() error {
		var i, b uint64
		for i < n {
			batch := db.NewBatch()
			for k := uint64(0); k < l0Batch && i < n; k++ {
				p := perm.apply(i)
				keyOf(p, key)
				valueOf(p, val)
				if err := batch.Set(key, val, nil); err != nil {
					return err
				}
				i++
				user += kvBytes
			}
			t := time.Now()
			if err := batch.Commit(pebble.NoSync); err != nil {
				return err
			}
			batch.Close()
			if widefile {
				valueOf(b, val)
				edges := db.NewBatch()
				_ = edges.Set(lo, val, nil)
				_ = edges.Set(hi, val, nil)
				if err := edges.Commit(pebble.NoSync); err != nil {
					return err
				}
				edges.Close()
				user += 2 * kvBytes
			}
			lat = append(lat, time.Since(t).Nanoseconds())
			b++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	writeSecs := time.Since(start).Seconds()
	settleShape, err := e.settleSampled()
	if err != nil {
		return nil, err
	}
	total := time.Since(start).Seconds()
	name := "l0-fillrandom"
	if widefile {
		name = "l0-fillrandom-widefile"
	}
	maxWrite := float64(slices.Max(append(lat, 0))) / 1e6
	line := map[string]any{"workload": name, "engine": "pebble",
		"params": withParams(tableParams(opts), map[string]any{"n": n, "batch": l0Batch, "widefile": widefile,
			"wal": true, "sync": false, "write_options": "pebble.NoSync", "target_file_mib": 64,
			"compaction_concurrency": "1..2 (CompactionConcurrencyRange; flushes run separately)",
			"flush_split_bytes":      opts.FlushSplitBytes,
			"write_amp_method":       "(flush + compaction bytes from the first batch until flushed and compactions done) / user bytes"}),
		"seconds":   map[string]any{"write": writeSecs, "settle": total - writeSecs, "total": total},
		"ops_per_s": float64(n) / total, "mb_per_s": float64(user) / 1e6 / total,
		"write_ops_per_s": float64(n) / writeSecs,
		"latency_us":      sluicePercentiles(lat), "max_write_ms": maxWrite}
	shape.maxWith(settleShape).put(line)
	l0Finish(line, e, before, user, st)
	return line, nil
}

func l0BuildFiles(n uint64, dir string) ([]string, error) {
	perm := newPermutation(n)
	wo := writerOptions(engineOptions(), pebble.FormatNewest.MaxTableFormat())
	var files []string
	key, val := make([]byte, keyLen), make([]byte, valueLen)
	for start := uint64(0); start < n; start += l0RowsPerFile {
		end := min(start+l0RowsPerFile, n)
		rows := make([]uint64, 0, end-start)
		for i := start; i < end; i++ {
			rows = append(rows, perm.apply(i))
		}
		slices.Sort(rows)
		p := filepath.Join(dir, fmt.Sprintf("%04d.sst", len(files)))
		f, err := vfs.Default.Create(p, vfs.WriteCategoryUnspecified)
		if err != nil {
			return nil, err
		}
		w := newSSTWriter(f, wo)
		for _, r := range rows {
			keyOf(r, key)
			valueOf(r, val)
			if err := w.Set(key, val); err != nil {
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// l0OnlineWriters: two goroutines at l0WriterRate puts/s in total until stop is set; returns
// latencies (ns from each put's scheduled start) and the put count.
func l0OnlineWriters(db *pebble.DB, n uint64, stop *atomic.Bool) ([]int64, uint64, error) {
	interval := time.Duration(2 * 1_000_000_000 / l0WriterRate)
	lats := make([][]int64, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for t := uint64(0); t < 2; t++ {
		wg.Add(1)
		go func(t uint64) {
			defer wg.Done()
			key := make([]byte, 1+keyLen)
			key[0] = 'w'
			val := make([]byte, valueLen)
			start := time.Now()
			for j := uint64(0); !stop.Load(); j++ {
				scheduled := start.Add(time.Duration(j) * interval)
				sleepUntil(scheduled)
				p := readRow(t+2*j, n)
				keyOf(p, key[1:])
				valueOf(p, val)
				if err := db.Set(key, val, pebble.NoSync); err != nil {
					errs[t] = err
					return
				}
				lats[t] = append(lats[t], time.Since(scheduled).Nanoseconds())
			}
		}(t)
	}
	wg.Wait()
	all := append(lats[0], lats[1]...)
	if errs[0] != nil {
		return nil, 0, errs[0]
	}
	return all, uint64(len(all)), errs[1]
}

func l0IngestRandom(n uint64, dir string) (map[string]any, error) {
	staging := filepath.Join(dir, "staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return nil, err
	}
	t := time.Now()
	files, err := l0BuildFiles(n, staging)
	if err != nil {
		return nil, err
	}
	buildSecs := time.Since(t).Seconds()
	// The same cache state in every engine: each staged file read once, untimed.
	if err := warmFiles(files); err != nil {
		return nil, err
	}
	opts := engineOptions()
	st := &stallTracker{}
	st.attach(opts)
	e := &engine{path: filepath.Join(dir, "db")}
	db, err := pebble.Open(e.path, opts)
	if err != nil {
		return nil, err
	}
	e.db = db
	defer db.Close()
	before := e.bgBytes()
	var stop atomic.Bool
	var lat []int64
	var puts uint64
	var werr error
	ingestMs := make([]float64, 0, len(files))
	start := time.Now()
	shape, err := e.withL0Sampler(func() error {
		done := make(chan struct{})
		go func() {
			lat, puts, werr = l0OnlineWriters(db, n, &stop)
			close(done)
		}()
		var ierr error
		for _, f := range files {
			ti := time.Now()
			if ierr = db.Ingest(context.Background(), []string{f}); ierr != nil {
				break
			}
			ingestMs = append(ingestMs, time.Since(ti).Seconds()*1e3)
		}
		stop.Store(true)
		<-done
		if ierr != nil {
			return ierr
		}
		return werr
	})
	if err != nil {
		return nil, err
	}
	ingestSecs := time.Since(start).Seconds()
	settleShape, err := e.settleSampled()
	if err != nil {
		return nil, err
	}
	total := time.Since(start).Seconds()
	sorted := slices.Clone(ingestMs)
	slices.Sort(sorted)
	line := map[string]any{"workload": "l0-ingest-random", "engine": "pebble",
		"params": withParams(tableParams(opts), map[string]any{"n": n, "rows_per_file": l0RowsPerFile,
			"files": len(files), "writer_rate": l0WriterRate, "writers": 2, "wal": true, "sync": false,
			"write_options": "pebble.NoSync", "target_file_mib": 64,
			"ingest":           "db.Ingest, one file per call (hard-linked; flushable ingest when it overlaps the memtable)",
			"write_amp_method": "(flush + compaction bytes from the first ingest until flushed and compactions done) / (ingested + online user bytes)"}),
		"seconds":   map[string]any{"build_untimed": buildSecs, "ingest": ingestSecs, "settle": total - ingestSecs, "total": total},
		"ops_per_s": float64(n) / total, "mb_per_s": float64(n*kvBytes) / 1e6 / total,
		"ingest_ms":   map[string]any{"p50": sorted[len(sorted)/2], "max": sorted[len(sorted)-1]},
		"online_puts": puts, "latency_us": sluicePercentiles(lat)}
	shape.maxWith(settleShape).put(line)
	l0Finish(line, e, before, n*kvBytes+puts*(kvBytes+1), st)
	return line, nil
}

func runL0(a args, base string, out *bufio.Writer) error {
	for round := 0; round < a.rounds; round++ {
		dir := filepath.Join(base, fmt.Sprintf("pebble-anchor-%d-%d", os.Getpid(), round))
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var line map[string]any
		var err error
		switch a.workload {
		case "l0-ingest-random":
			line, err = l0IngestRandom(a.n, dir)
		default:
			line, err = l0Fill(a.n, a.workload == "l0-fillrandom-widefile", dir)
		}
		if err != nil {
			return err
		}
		line["round"] = round
		if err := emit(out, line, dir); err != nil {
			return err
		}
	}
	return nil
}
