package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// Percentiles are picked as sluice-bench's Latencies::summary: sorted[min(floor(len*q), len-1)].
func TestSluicePercentiles(t *testing.T) {
	lat := make([]int64, 10_000)
	for i := range lat {
		lat[i] = int64(len(lat)-1-i) * 1000
	}
	s := sluicePercentiles(lat)
	for k, want := range map[string]float64{"p50": 5000, "p99": 9900, "p999": 9990, "p9999": 9999} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v", k, s[k], want)
		}
	}
	if sluicePercentiles(nil) != nil {
		t.Error("empty: want nil")
	}
}

// A short ingest-under-load run (2 s per phase, 200 puts/s) prints a complete result line.
func TestIngestUnderLoadShort(t *testing.T) {
	var buf bytes.Buffer
	out := bufio.NewWriter(&buf)
	a := args{workload: "ingest-under-load", n: 1000, rounds: 1, seconds: 2, rate: 200}
	if err := runIngestUnderLoad(a, t.TempDir(), out); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %q", err, buf.String())
	}
	if line["workload"] != "ingest-under-load" || line["engine"] != "pebble" {
		t.Fatalf("bad line %v", line)
	}
	if ms, _ := line["ingest_ms"].([]any); len(ms) != 2 {
		t.Errorf("ingest_ms = %v, want 2 entries", line["ingest_ms"])
	}
	for _, k := range []string{"latency_us_without", "latency_us_with"} {
		m, _ := line[k].(map[string]any)
		for _, p := range []string{"p50", "p99", "p999", "p9999"} {
			if v, _ := m[p].(float64); v <= 0 {
				t.Errorf("%s.%s = %v", k, p, m[p])
			}
		}
	}
	if _, ok := line["p9999_ratio"].(float64); !ok {
		t.Errorf("p9999_ratio = %v", line["p9999_ratio"])
	}
}
