// Command memtarget is the test target of `goheap2pprof mem`: a Go program
// that holds a known amount of memory outside the Go runtime (C.malloc'd
// and touched, in a cgo build) and a few MiB of Go heap, then prints its own
// runtime/metrics view and waits, quiescent, until SIGTERM. On SIGUSR1 it
// prints its view again, then "AGAIN <n>" (n = 1, 2, ...), so that a test can
// tell whether its total moved while the test read it.
//
//	memtarget [-cmalloc MiB] [-heap]   # prints "METRIC <name> <value>" lines, then "READY <pid>"
//
// Signal handling is set up first: signal.Notify starts two goroutines, one
// locked to a new thread, and a thread made after READY allocates its signal
// stack from the heap, which grew the heap by a 4 MiB chunk in 2 of 200 runs
// when Notify came after READY.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
)

var retained [][]byte

func main() {
	cmalloc := flag.Int("cmalloc", 0, "MiB to C.malloc and touch (cgo builds only)")
	// Reachable use of the heap profile, so that the linker keeps heap
	// profiling in (for --format debug1 of this target).
	heap := flag.Bool("heap", false, "print the own heap?debug=1 text at READY")
	flag.Parse()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGUSR1)
	if *cmalloc > 0 && !cMalloc(*cmalloc) {
		fmt.Fprintln(os.Stderr, "memtarget: -cmalloc needs a cgo build")
		os.Exit(2)
	}
	for i := 0; i < 64; i++ {
		b := make([]byte, 64<<10)
		for j := range b {
			b[j] = 1 // resident, as a real program's heap is
		}
		retained = append(retained, b)
	}
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	printMetrics(samples)
	if *heap {
		pprof.Lookup("heap").WriteTo(os.Stdout, 1)
	}
	fmt.Printf("READY %d\n", os.Getpid())
	for n := 1; ; n++ {
		select {
		case <-term:
			runtime.KeepAlive(retained)
			return
		case <-again:
			printMetrics(samples)
			fmt.Printf("AGAIN %d\n", n)
		}
	}
}

func printMetrics(samples []metrics.Sample) {
	metrics.Read(samples)
	for _, s := range samples {
		fmt.Printf("METRIC %s %d\n", s.Name, s.Value.Uint64())
	}
}
