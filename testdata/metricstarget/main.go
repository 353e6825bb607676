// Command metricstarget is the oracle of serve's per-process /metrics: a Go
// program that holds still and, when asked, reports its own runtime
// statistics as the Go collector of prometheus/client_golang would read
// them inside the process.
//
//	metricstarget [-retain MiB] [-goroutines N]   # prints "READY <pid>", then waits on stdin
//	echo dump >&<its stdin>                         # one JSON line on stdout (below)
//
// Before READY it retains the heap it was asked for, starts idle
// goroutines, collects twice and returns free memory to the system, so
// that nothing in the runtime moves while it waits: an outside read made
// meanwhile must equal what the process reads itself afterwards. The dump
// reads, in this order and without allocating before the last read:
// runtime/metrics (every scalar metric of this Go), debug.ReadGCStats with
// five pause quantiles, runtime.NumGoroutine and the thread count that
// runtime.ThreadCreateProfile gives. Then it writes
//
//	{"go_version": "go1.26.8", "metrics": {"/memory/classes/total:bytes": 123, ...},
//	 "num_gc": 3, "pause_total_ns": 81000, "pause_quantiles_ns": [5 values],
//	 "last_gc_unix_ns": 176..., "num_goroutine": 11, "threads": 6}
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

var retained [][]byte

//go:noinline
func retain(mib int) {
	for i := 0; i < mib*16; i++ {
		retained = append(retained, make([]byte, 64<<10))
	}
	for i := 0; i < mib*1024; i++ {
		retained = append(retained, make([]byte, 48))
	}
}

type dump struct {
	GoVersion        string                 `json:"go_version"`
	Metrics          map[string]interface{} `json:"metrics"`
	NumGC            int64                  `json:"num_gc"`
	PauseTotalNs     int64                  `json:"pause_total_ns"`
	PauseQuantilesNs []int64                `json:"pause_quantiles_ns"`
	LastGCUnixNs     int64                  `json:"last_gc_unix_ns"`
	NumGoroutine     int                    `json:"num_goroutine"`
	Threads          int                    `json:"threads"`
}

func main() {
	mib := flag.Int("retain", 8, "MiB of heap to retain")
	goroutines := flag.Int("goroutines", 5, "idle goroutines to start")
	flag.Parse()
	retain(*mib)
	block := make(chan struct{})
	for i := 0; i < *goroutines; i++ {
		go func() { <-block }()
	}

	// Everything the dump needs, allocated now.
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 || d.Kind == metrics.KindFloat64 {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	var gc debug.GCStats
	gc.Pause = make([]time.Duration, 0, 2*256+3)
	gc.PauseEnd = make([]time.Time, 0, 256)
	gc.PauseQuantiles = make([]time.Duration, 5)
	line := make([]byte, 64)
	ready := []byte(fmt.Sprintf("READY %d\n", os.Getpid()))
	out := bufio.NewWriterSize(os.Stdout, 1<<16)

	// Once before the collection: the first metrics.Read builds the
	// runtime's table of metrics on the heap, which would otherwise happen
	// between an outside read and the dump.
	metrics.Read(samples)
	debug.ReadGCStats(&gc)
	runtime.ThreadCreateProfile(nil)
	runtime.GC()
	debug.FreeOSMemory()
	os.Stdout.Write(ready)
	for {
		if n, err := os.Stdin.Read(line); err != nil || n == 0 {
			return
		}
		metrics.Read(samples)
		debug.ReadGCStats(&gc)
		goroutineCount := runtime.NumGoroutine()
		threads, _ := runtime.ThreadCreateProfile(nil)

		d := dump{GoVersion: runtime.Version(), Metrics: map[string]interface{}{},
			NumGC: gc.NumGC, PauseTotalNs: int64(gc.PauseTotal),
			LastGCUnixNs: gc.LastGC.UnixNano(), NumGoroutine: goroutineCount, Threads: threads}
		if gc.NumGC == 0 {
			d.LastGCUnixNs = 0
		}
		for _, q := range gc.PauseQuantiles {
			d.PauseQuantilesNs = append(d.PauseQuantilesNs, int64(q))
		}
		for _, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				d.Metrics[s.Name] = s.Value.Uint64()
			} else {
				d.Metrics[s.Name] = s.Value.Float64()
			}
		}
		enc := json.NewEncoder(out)
		enc.Encode(d)
		out.Flush()
	}
}
