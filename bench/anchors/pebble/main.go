// Command pebble-anchor is the Pebble side of the Sluice benchmark harness.
//
// Same CLI and JSON result lines as sluice-bench:
//
//	pebble-anchor <sst-write|sst-scan|sst-scan-db|kv-bulkload> [--n N] [--dir DIR] [--rounds R]
//	              [--file-mib M] [--reads R]
//	pebble-anchor <fillseq|fillrandom|overwrite|readrandom|seekrandom|block_writer>
//	              [--n N] [--dir DIR] [--rounds R] [--reads R] [--seconds S]
//	pebble-anchor ingest-under-load [--n N] [--dir DIR] [--rounds R] [--seconds S] [--rate R]
//
// The engine workloads (second and third forms) are those of bench/WORKLOADS.md; see engine.go
// and ingest.go.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

const usage = "usage: pebble-anchor <sst-write|sst-scan|sst-scan-db|kv-bulkload> [--n N] [--dir DIR] " +
	"[--rounds R] [--file-mib M] [--reads R]\n" +
	"       pebble-anchor <fillseq|fillrandom|overwrite|readrandom|seekrandom|block_writer> " +
	"[--n N] [--dir DIR] [--rounds R] [--reads R] [--seconds S] [--ops OPS]\n" +
	"       pebble-anchor ingest-under-load [--n N] [--dir DIR] [--rounds R] [--seconds S] [--rate R]"

type args struct {
	workload string
	n        uint64
	fileMiB  uint64 // 0 = workload default
	dir      string
	rounds   int
	reads    uint64
	seconds  uint64
	ops      uint64 // block_writer: stop after this many ops, not after seconds (0: seconds)
	rate     uint64 // ingest-under-load: total put rate of the two writers, per second
}

func parseArgs(argv []string) (args, error) {
	a := args{rounds: 1, rate: 20_000}
	var nSet, readsSet, secondsSet bool
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		flag, inline, hasInline := arg, "", false
		if strings.HasPrefix(arg, "--") {
			if f, v, ok := strings.Cut(arg, "="); ok {
				flag, inline, hasInline = f, v, true
			}
		}
		val := func() (string, error) {
			if hasInline {
				return inline, nil
			}
			if i+1 >= len(argv) {
				return "", fmt.Errorf("%s needs a value", flag)
			}
			i++
			return argv[i], nil
		}
		num := func() (uint64, error) {
			s, err := val()
			if err != nil {
				return 0, err
			}
			v, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %v", flag, err)
			}
			return v, nil
		}
		var err error
		switch flag {
		case "--n":
			a.n, err = num()
			nSet = true
		case "--file-mib":
			a.fileMiB, err = num()
		case "--reads":
			a.reads, err = num()
			readsSet = true
		case "--seconds":
			a.seconds, err = num()
			secondsSet = true
		case "--rate":
			a.rate, err = num()
		case "--ops":
			a.ops, err = num()
			if err == nil && a.ops == 0 {
				err = errors.New("must be at least 1")
			}
		case "--rounds":
			var r uint64
			r, err = num()
			a.rounds = int(r)
		case "--dir":
			a.dir, err = val()
		case "-h", "--help":
			fmt.Println(usage)
			os.Exit(0)
		case "sst-write", "sst-scan", "sst-scan-db", "kv-bulkload",
			"fillseq", "fillrandom", "fillrandom-sync", "overwrite", "readrandom", "seekrandom", "block_writer",
			"ingest-under-load", "l0-fillrandom", "l0-fillrandom-widefile", "l0-ingest-random":
			if a.workload != "" {
				return a, fmt.Errorf("unexpected argument '%s'", arg)
			}
			a.workload = arg
		default:
			return a, fmt.Errorf("unexpected argument '%s'", arg)
		}
		if err != nil {
			return a, err
		}
	}
	if a.workload == "" {
		return a, errors.New("missing workload")
	}
	// Defaults: the kv-bulkload harness uses N = 10M and 1M reads; bench/WORKLOADS.md uses
	// N = 1M and reads = N/10.
	engine := isEngineWorkload(a.workload)
	if !nSet {
		a.n = 10_000_000
		if engine {
			a.n = 1_000_000
		}
	}
	if !readsSet {
		a.reads = 1_000_000
		if engine {
			a.reads = max(a.n/10, 1)
		}
	}
	if a.n == 0 {
		return a, errors.New("--n must be at least 1")
	}
	// block_writer runs 60 s; ingest-under-load 20 s per phase (as sluice-bench).
	iul := a.workload == "ingest-under-load"
	if !secondsSet {
		a.seconds = 60
		if iul {
			a.seconds = 20
		}
	}
	if (a.workload == "block_writer" || iul) && a.seconds == 0 {
		return a, errors.New("--seconds must be at least 1")
	}
	if iul && a.rate == 0 {
		return a, errors.New("--rate must be at least 1")
	}
	return a, nil
}

func peakRSSKiB() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				v, _ := strconv.ParseUint(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}

func treeBytes(p string) uint64 {
	var total uint64
	_ = filepath.Walk(p, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += uint64(info.Size())
		}
		return nil
	})
	return total
}

func pebbleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/cockroachdb/pebble/v2" {
				return d.Version
			}
		}
	}
	return "unknown"
}

// dbOptions: no compression, Bloom 10 bits/key (table filter), 4 KiB blocks, 64 MiB
// memtables (never grown past their first 256 KiB: the WAL is off and nothing is written
// through them), a 32 MiB cache, WAL off.
func dbOptions() *pebble.Options {
	o := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memTableBytes,
		CacheSize:          blockCacheBytes,
		DisableWAL:         true,
		Logger:             quietLogger{},
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = 4096
		o.Levels[i].IndexBlockSize = indexBlockBytes
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = pebble.TableFilter
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	o.EnsureDefaults()
	return o
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})      {}
func (quietLogger) Errorf(f string, a ...interface{}) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (quietLogger) Fatalf(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
	os.Exit(1)
}

// writerOptions for external SSTs in the given table format, matching dbOptions.
func writerOptions(o *pebble.Options, format sstable.TableFormat) sstable.WriterOptions {
	wo := o.MakeWriterOptions(0, format)
	wo.BlockSize = 4096
	wo.IndexBlockSize = indexBlockBytes
	wo.Compression = sstable.NoCompression
	wo.FilterPolicy = bloom.FilterPolicy(10)
	wo.FilterType = sstable.TableFilter
	return wo
}

// writeSSTs writes the records rec(0..count) (sorted, recLen bytes each) into SSTs of about
// fileBytes in dir, names prefixed with prefix.
func writeSSTs(count int, rec func(int) []byte, dir, prefix string, fileBytes uint64,
	wo sstable.WriterOptions) ([]string, error) {
	var files []string
	var w *sstable.Writer
	for j := 0; j < count; j++ {
		if w == nil {
			p := filepath.Join(dir, fmt.Sprintf("%s%06d.sst", prefix, len(files)))
			f, err := vfs.Default.Create(p, vfs.WriteCategoryUnspecified)
			if err != nil {
				return nil, err
			}
			files = append(files, p)
			w = newSSTWriter(f, wo)
		}
		r := rec(j)
		if err := w.Set(r[:keyLen], r[keyLen:]); err != nil {
			return nil, err
		}
		if w.Raw().EstimatedSize() >= fileBytes {
			if err := w.Close(); err != nil {
				return nil, err
			}
			w = nil
		}
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// scanRaw reads every entry of the given SSTs with sstable.Reader; returns the entry count and
// user key + value bytes.
func scanRaw(files []string, opts *pebble.Options) (entries, nbytes uint64, err error) {
	ropts := opts.MakeReaderOptions()
	for _, p := range files {
		f, err := vfs.Default.Open(p)
		if err != nil {
			return 0, 0, err
		}
		readable, err := objstorageprovider.NewFileReadable(f, vfs.Default,
			objstorageprovider.NewReadaheadConfig(), p)
		if err != nil {
			return 0, 0, err
		}
		r, err := sstable.NewReader(context.Background(), readable, ropts)
		if err != nil {
			return 0, 0, err
		}
		it, err := r.NewIter(sstable.NoTransforms, nil, nil, sstable.AssertNoBlobHandles)
		if err != nil {
			return 0, 0, err
		}
		for kv := it.First(); kv != nil; kv = it.Next() {
			v, _, err := kv.Value(nil)
			if err != nil {
				return 0, 0, err
			}
			entries++
			nbytes += uint64(len(kv.K.UserKey) + len(v))
		}
		if err := errors.Join(it.Error(), it.Close(), r.Close()); err != nil {
			return 0, 0, err
		}
	}
	return entries, nbytes, nil
}

func percentileUs(sortedNs []int64, q float64) float64 {
	if len(sortedNs) == 0 {
		return 0
	}
	// sorted[min(floor(len*q), len-1)], the rule of every engine in the harness.
	idx := int(float64(len(sortedNs)) * q)
	if idx > len(sortedNs)-1 {
		idx = len(sortedNs) - 1
	}
	return float64(sortedNs[idx]) / 1e3
}

func run(a args, out *bufio.Writer) error {
	base := a.dir
	if base == "" {
		base = os.TempDir()
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	if a.workload == "ingest-under-load" {
		return runIngestUnderLoad(a, base, out)
	}
	if isL0Workload(a.workload) {
		return runL0(a, base, out)
	}
	if isEngineWorkload(a.workload) {
		return runEngine(a, base, out)
	}
	fileMiB := a.fileMiB
	if fileMiB == 0 {
		fileMiB = 256
		if a.workload == "kv-bulkload" {
			fileMiB = 128
		}
	}
	fileBytes := fileMiB << 20
	opts := dbOptions()

	t0 := time.Now()
	var input []byte
	if a.workload == "kv-bulkload" {
		input = specInput(a.n)
	} else {
		input = sortedInput(a.n)
	}
	genSecs := time.Since(t0).Seconds()
	inputMB := float64(len(input)) / 1e6
	n := int(a.n)
	recAt := func(i int) []byte { return input[i*recLen : (i+1)*recLen] }

	for round := 0; round < a.rounds; round++ {
		dir := filepath.Join(base, fmt.Sprintf("pebble-anchor-%d-%d", os.Getpid(), round))
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		params := withParams(tableParams(opts), map[string]any{"n": a.n, "file_mib": fileMiB})
		var line map[string]any
		switch a.workload {
		case "sst-write", "sst-scan", "sst-scan-db":
			format := pebble.FormatNewest.MaxTableFormat()
			params["table_format"] = format.String()
			wo := writerOptions(opts, format)
			t := time.Now()
			files, err := writeSSTs(n, recAt, dir, "", fileBytes, wo)
			if err != nil {
				return err
			}
			writeSecs := time.Since(t).Seconds()
			var onDisk uint64
			for _, f := range files {
				onDisk += treeBytes(f)
			}
			if a.workload == "sst-write" {
				line = map[string]any{"workload": "sst-write", "engine": "pebble", "round": round, "params": params,
					"seconds":  map[string]any{"generate": genSecs, "write": writeSecs},
					"mb_per_s": inputMB / writeSecs, "ops_per_s": float64(a.n) / writeSecs,
					"files": len(files), "bytes_on_disk": onDisk, "peak_rss_kib": peakRSSKiB()}
				break
			}
			seconds := map[string]any{"generate": genSecs, "write": writeSecs}
			var entries, nbytes uint64
			var scanSecs float64
			if a.workload == "sst-scan" {
				params["reader"] = "sstable.Reader + point iterator per file (objstorageprovider readable, readahead)"
				// The same cache state in every engine: each file read once, untimed.
				tw := time.Now()
				if err := warmFiles(files); err != nil {
					return err
				}
				seconds["warm"] = time.Since(tw).Seconds()
				t = time.Now()
				if entries, nbytes, err = scanRaw(files, opts); err != nil {
					return err
				}
				scanSecs = time.Since(t).Seconds()
			} else {
				params["reader"] = "db.Ingest (untimed) into a fresh DB, then one db.NewIter(nil)"
				ti := time.Now()
				db, err := pebble.Open(filepath.Join(dir, "db"), opts)
				if err != nil {
					return err
				}
				if err := db.Ingest(context.Background(), files); err != nil {
					return err
				}
				seconds["ingest"] = time.Since(ti).Seconds()
				tw := time.Now()
				if err := warmDir(filepath.Join(dir, "db")); err != nil {
					return err
				}
				seconds["warm"] = time.Since(tw).Seconds()
				t = time.Now()
				it, err := db.NewIter(nil)
				if err != nil {
					return err
				}
				for ok := it.First(); ok; ok = it.Next() {
					entries++
					nbytes += uint64(len(it.Key()) + len(it.Value()))
				}
				if err := errors.Join(it.Error(), it.Close()); err != nil {
					return err
				}
				scanSecs = time.Since(t).Seconds()
				if err := db.Close(); err != nil {
					return err
				}
			}
			seconds["scan"] = scanSecs
			if entries != a.n {
				return fmt.Errorf("scan saw %d entries, wrote %d", entries, a.n)
			}
			line = map[string]any{"workload": a.workload, "engine": "pebble", "round": round, "params": params,
				"seconds":  seconds,
				"mb_per_s": float64(nbytes) / 1e6 / scanSecs, "ops_per_s": float64(entries) / scanSecs,
				"files": len(files), "bytes_on_disk": onDisk, "peak_rss_kib": peakRSSKiB()}

		case "kv-bulkload":
			params["reads"] = a.reads
			params["writer_threads"] = 2
			params["recipe"] = "sort index; 2 sstable.Writer goroutines on disjoint key ranges; one db.Ingest"
			params["sort"] = sortName
			params["cache_state"] = "every DB file read once (untimed) before the reads"
			ssts := filepath.Join(dir, "ssts")
			dbPath := filepath.Join(dir, "db")
			if err := os.MkdirAll(ssts, 0o755); err != nil {
				return err
			}
			// --- load: from the generated pairs in memory to the data being readable.
			t := time.Now()
			// Keys start with BE64(p), p unique: sorting by that prefix sorts the keys.
			idx := make([]ent, n)
			for i := range idx {
				idx[i] = ent{binary.BigEndian.Uint64(input[i*recLen:]), uint32(i)}
			}
			idx = radixSort(idx)
			sortSecs := time.Since(t).Seconds()
			to := time.Now()
			db, err := pebble.Open(dbPath, opts)
			if err != nil {
				return err
			}
			openSecs := time.Since(to).Seconds()
			params["table_format"] = db.TableFormat().String()
			wo := writerOptions(opts, db.TableFormat())
			mid := n / 2
			halves := [2][]ent{idx[:mid], idx[mid:]}
			var files [2][]string
			var errs [2]error
			var wg sync.WaitGroup
			tw := time.Now()
			for h := 0; h < 2; h++ {
				wg.Add(1)
				go func(h int) {
					defer wg.Done()
					part := halves[h]
					files[h], errs[h] = writeSSTs(len(part), gatheredRecs(input, part),
						ssts, string(rune('a'+h)), fileBytes, wo)
				}(h)
			}
			wg.Wait()
			if err := errors.Join(errs[0], errs[1]); err != nil {
				return err
			}
			writeSecs := time.Since(tw).Seconds()
			all := append(append([]string{}, files[0]...), files[1]...)
			ti := time.Now()
			if err := db.Ingest(context.Background(), all); err != nil {
				return err
			}
			ingestSecs := time.Since(ti).Seconds()
			loadSecs := time.Since(t).Seconds()
			idx = nil
			// --- the same cache state in every engine: each file read once, untimed.
			tw = time.Now()
			if err := warmDir(dbPath); err != nil {
				return err
			}
			warmSecs := time.Since(tw).Seconds()
			// --- reads
			lat := make([]int64, 0, a.reads)
			key := make([]byte, keyLen)
			missing := 0
			t = time.Now()
			for i := uint64(0); i < a.reads; i++ {
				keyOf(readRow(i, a.n), key)
				s := time.Now()
				v, closer, err := db.Get(key)
				d := time.Since(s)
				if err == nil {
					if len(v) != valueLen {
						missing++
					}
					closer.Close()
				} else if errors.Is(err, pebble.ErrNotFound) {
					missing++
				} else {
					return err
				}
				lat = append(lat, d.Nanoseconds())
			}
			readsSecs := time.Since(t).Seconds()
			if missing > 0 {
				return fmt.Errorf("%d of %d reads did not find their key", missing, a.reads)
			}
			slices.Sort(lat)
			// --- untimed: full scan checksum
			h := sha256.New()
			it, err := db.NewIter(nil)
			if err != nil {
				return err
			}
			var entries uint64
			var prev []byte
			for ok := it.First(); ok; ok = it.Next() {
				if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
					return errors.New("scan out of order")
				}
				prev = append(prev[:0], it.Key()...)
				h.Write(it.Key())
				h.Write(it.Value())
				entries++
			}
			if err := errors.Join(it.Error(), it.Close()); err != nil {
				return err
			}
			if entries != a.n {
				return fmt.Errorf("scan saw %d entries, loaded %d", entries, a.n)
			}
			readAmp := db.Metrics().ReadAmp()
			if err := db.Close(); err != nil {
				return err
			}
			opsPerS := 0.0
			if readsSecs > 0 {
				opsPerS = float64(a.reads) / readsSecs
			}
			line = map[string]any{"workload": "kv-bulkload", "engine": "pebble", "round": round, "params": params,
				"seconds": map[string]any{"generate": genSecs, "load": loadSecs, "reads": readsSecs,
					"sort": sortSecs, "open_db": openSecs, "write_ssts": writeSecs, "ingest": ingestSecs, "warm": warmSecs},
				"mb_per_s": inputMB / loadSecs, "ops_per_s": opsPerS,
				"latency_us": map[string]any{"p50": percentileUs(lat, 0.50), "p99": percentileUs(lat, 0.99),
					"p999": percentileUs(lat, 0.999)},
				"scan_sha256": hex.EncodeToString(h.Sum(nil)), "read_amp": readAmp,
				"files": len(all), "bytes_on_disk": treeBytes(dbPath), "peak_rss_kib": peakRSSKiB()}
		}
		if err := emit(out, line, dir); err != nil {
			return err
		}
	}
	return nil
}

// emit prints one result line and removes the round's directory.
func emit(out *bufio.Writer, line map[string]any, dir string) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
	return os.RemoveAll(dir)
}

func main() {
	a, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	if err := run(a, out); err != nil {
		out.Flush()
		fmt.Fprintf(os.Stderr, "pebble-anchor %s: %v\n", a.workload, err)
		os.Exit(1)
	}
	out.Flush()
}
