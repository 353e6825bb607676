// Command churn is the "big, busy service" of goheap2pprof's consistency test
// (tests/e2e/consistency_test.sh) and harmlessness benchmark (bench/): many
// goroutines allocate and free constantly, with GOGC low enough that the GC
// runs several times a second, so the heap profile's cycle keeps changing
// while a capture reads it. It serves net/http/pprof, and its own throughput:
//
//	churn [-port 0] [-workers 16] [-rate 4096] [-gogc 10] [-live 4]
//	READY <pid> <port>
//	curl 127.0.0.1:<port>/stats  ->  "items <work items done> gcs <GC cycles> ns <monotonic ns>"
//
// A work item allocates a few objects of varied sizes along one of several
// call paths (so there are a few hundred buckets), keeps them in the
// worker's ring of recent items (-live MiB in total across workers, the live
// heap) and drops the oldest: every allocation is freed a little later.
// /stats is cheap (atomic counters, runtime/metrics; no stop-the-world), so a
// harness can poll it to measure throughput over a window.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

var items atomic.Uint64

// The call paths: a work item allocates through one of pathA..pathD, chosen
// by its number, so samples have a handful of distinct stacks.

//go:noinline
func pathA(r *rng, n int) [][]byte { return alloc(r, n) }

//go:noinline
func pathB(r *rng, n int) [][]byte { return alloc(r, n) }

//go:noinline
func pathC(r *rng, n int) [][]byte { return pathA(r, n) }

//go:noinline
func pathD(r *rng, n int) [][]byte { return pathB(r, n) }

// alloc makes n objects of 16 bytes .. 8 KiB (log-uniform) plus their slice.
//
//go:noinline
func alloc(r *rng, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		size := 16 << (r.next() % 10)
		size += int(r.next() % uint64(size))
		out[i] = make([]byte, size)
		out[i][0] = byte(i)
	}
	return out
}

// mapWork builds and drops a small map (runtime-internal allocation frames).
//
//go:noinline
func mapWork(r *rng) int {
	m := make(map[uint64]string, 8)
	for i := 0; i < 16; i++ {
		m[r.next()] = "x"
	}
	return len(m)
}

type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s
}

// worker does work items forever, keeping the last `keep` items alive.
func worker(id int, keep int) {
	r := &rng{s: uint64(id)*0x9e3779b97f4a7c15 + 1}
	ring := make([][][]byte, keep)
	for i := 0; ; i++ {
		var objs [][]byte
		switch i % 4 {
		case 0:
			objs = pathA(r, 8)
		case 1:
			objs = pathB(r, 8)
		case 2:
			objs = pathC(r, 8)
		default:
			objs = pathD(r, 8)
		}
		if i%16 == 0 {
			mapWork(r)
		}
		ring[i%keep] = objs
		items.Add(1)
	}
}

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	workers := flag.Int("workers", 16, "allocating goroutines")
	rate := flag.Int("rate", 4096, "runtime.MemProfileRate")
	gogc := flag.Int("gogc", 10, "GC percent (debug.SetGCPercent)")
	liveMiB := flag.Int("live", 4, "approximate live heap in MiB (all workers' rings)")
	flag.Parse()
	runtime.MemProfileRate = *rate
	debug.SetGCPercent(*gogc)
	if *workers < 1 || *liveMiB < 1 {
		fmt.Fprintln(os.Stderr, "churn: bad -workers or -live")
		os.Exit(2)
	}

	// An item holds 8 objects of ~3 KiB on average (log-uniform 16 B..16 KiB).
	keep := *liveMiB << 20 / (*workers * 8 * 3 << 10)
	if keep < 1 {
		keep = 1
	}
	for w := 0; w < *workers; w++ {
		go worker(w, keep)
	}

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "churn:", err)
		os.Exit(1)
	}
	start := time.Now()
	http.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(s)
		var gcs uint64
		if s[0].Value.Kind() == metrics.KindUint64 {
			gcs = s[0].Value.Uint64()
		}
		fmt.Fprintf(w, "items %d gcs %d ns %d\n", items.Load(), gcs, time.Since(start).Nanoseconds())
	})
	fmt.Printf("READY %d %d\n", os.Getpid(), ln.Addr().(*net.TCPAddr).Port)
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, "churn:", err)
		os.Exit(1)
	}
}
