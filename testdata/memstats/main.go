// Command memstats is the oracle target of goheap2pprof's memory-statistics
// read. It builds a varied heap (tiny, small and large objects, on several
// Ps, freed and retained, goroutines blocked and exited), prints
// "READY <pid>" and blocks in a read(2) of stdin, so that nothing in it
// allocates. The test reads it from outside then, and writes a line to its
// stdin; the program then takes its own view at once, in this order:
// runtime/metrics.Read of every scalar metric, runtime.ReadMemStats,
// runtime.NumGoroutine and runtime.ThreadCreateProfile; writes them as JSON
// to -out, prints "DONE" and blocks again.
//
//	memstats -out view.json
//	memstats -out view.json -heap-mib 1024   # for bench/memstats_read.sh
//	memstats -out view.json -stress          # busy: allocating, metrics.Read in a loop
//
// -stress keeps four goroutines allocating and one calling metrics.Read
// (which rotates heapStats.gen) without pause: the outside read must then
// still be consistent (never a cumulative counter going backwards). It
// writes no view and ignores stdin.
//
// The outside read comes first on purpose: ReadMemStats flushes every P's
// mcache, and the outside read must emulate that flush from the cached
// spans; read after it, there would be nothing left to emulate.
package main

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
)

var (
	big      [][]byte
	retained [][]byte
	ptrs     []*node
	blockers = make(chan struct{})
	ms       runtime.MemStats
)

type node struct {
	next *node
	pad  [5]uint64
}

// allocate builds garbage and a retained heap of every size kind.
func allocate(seed int) {
	for i := 0; i < 20000; i++ {
		b := make([]byte, 1+(i*7+seed)%64) // tiny and small noscan
		if i%5 == 0 {
			retained = append(retained, b)
		}
	}
	for i := 0; i < 3000; i++ {
		n := &node{}
		if i%3 == 0 {
			ptrs = append(ptrs, n)
		}
	}
	for i := 0; i < 200; i++ {
		b := make([]byte, 100+i*150) // up to 30 KB: most size classes
		if i%2 == 0 {
			retained = append(retained, b)
		}
	}
	for i := 0; i < 8; i++ {
		b := make([]byte, 40000+i*70000) // large objects
		if i%2 == 1 {
			retained = append(retained, b)
		}
	}
}

func main() {
	out := flag.String("out", "", "where the JSON view goes")
	heapMiB := flag.Int("heap-mib", 0, "also retain this many MiB of 512-byte objects")
	stress := flag.Bool("stress", false, "allocate and call metrics.Read without pause")
	crash := flag.Bool("crash-view", false, "write the view to -out without allocating, then SIGABRT (crashview.go)")
	quiet := flag.Bool("quiet-view", false, "write the view to -out without allocating, then block (crashview.go)")
	flag.Parse()
	if *out == "" {
		os.Stderr.WriteString("memstats: -out is required\n")
		os.Exit(2)
	}
	// Names and the sample slice exist before the quiet point: metrics.Read
	// itself then allocates nothing (warmed up below).
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 || d.Kind == metrics.KindFloat64 {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	runtime.ReadMemStats(&ms)
	runtime.ThreadCreateProfile(nil)

	for i := 0; i < *heapMiB*2048; i++ {
		big = append(big, make([]byte, 512))
	}
	allocate(0)
	runtime.GC()
	// Goroutines that exit leave free Gs; those that block stay counted.
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			allocate(i + 1)
		}(i)
	}
	wg.Wait()
	// Done runs before the goroutine has exited: its exit frees a stack it
	// grew (StackInuse down, HeapSys up by 32 KiB), which on a loaded machine
	// came after a view and before the core. A goroutine leaves the count
	// only once its exit is complete.
	for runtime.NumGoroutine() > before {
		runtime.Gosched()
	}
	for i := 0; i < 4; i++ {
		go func() { <-blockers }()
	}
	runtime.GC()
	// After the GC every mcache was flushed: allocate again so that the
	// cached spans hold slots ReadMemStats will count on its flush.
	allocate(42)

	if *stress {
		startStress()
	}
	// The runtime may start an M while we block (sysmon handing off the P,
	// a background worker waking): the outside read then sees a count
	// between this one and the view's. ThreadCreateProfile(nil) only counts.
	threadsAtReady, _ := runtime.ThreadCreateProfile(nil)
	os.Stdout.WriteString("READY " + strconv.Itoa(os.Getpid()) + "\n")
	if *stress {
		select {} // the writers never block: no deadlock to detect
	}
	line := make([]byte, 64)
	if *crash || *quiet {
		f, err := os.Create(*out)
		if err != nil {
			panic(err)
		}
		buf := make([]byte, 0, 256<<10)
		syscall.Read(0, line)
		crashView(int(f.Fd()), samples, buf, *crash)
	}
	syscall.Read(0, line)

	// Nothing may allocate from here to the last of the four calls.
	metrics.Read(samples)
	runtime.ReadMemStats(&ms)
	goroutines := runtime.NumGoroutine()
	threads, _ := runtime.ThreadCreateProfile(nil)

	view := map[string]interface{}{
		"num_goroutine":    goroutines,
		"threads":          threads,
		"threads_at_ready": threadsAtReady,
		"memstats":         ms,
	}
	ints := map[string]uint64{}
	floats := map[string]float64{}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			ints[s.Name] = s.Value.Uint64()
		case metrics.KindFloat64:
			if f := s.Value.Float64(); !math.IsNaN(f) && !math.IsInf(f, 0) {
				floats[s.Name] = f
			}
		}
	}
	view["metrics_uint64"] = ints
	view["metrics_float64"] = floats
	data, err := json.Marshal(view)
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		panic(err)
	}
	os.Stdout.WriteString("DONE\n")
	for {
		if n, _ := syscall.Read(0, line); n <= 0 {
			os.Exit(0) // the test closed stdin
		}
	}
}

var sink []byte

// startStress starts the writers and the in-process reader of -stress.
func startStress() {
	for i := 0; i < 4; i++ {
		go func(i int) {
			var keep [][]byte
			for n := 0; ; n++ {
				b := make([]byte, 8+(n*13+i)%5000)
				if n%7 == 0 {
					keep = append(keep, b)
					if len(keep) > 10000 {
						keep = keep[:0]
					}
				}
				sink = b
			}
		}(i)
	}
	go func() {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
		for {
			metrics.Read(s)
		}
	}()
}
