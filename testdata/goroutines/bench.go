// The "bench" mode of the oracle (bench/goroutines.sh): the n goroutines of
// one site park under 30 frames of their own, and the target times its own
// goroutine profile at debug=1 and debug=2 (three writes each), which stop
// the world, into <dir>/own.txt before it says ready:
//
//	debug=1 <wall s> <cpu s> <pauses> <longest pause s> <paused s>
//
// cpu is the process's user+system time over the write; the pauses are the
// stop-the-world pauses other than the GC's that runtime/metrics counted
// meanwhile (/sched/pauses/total/other:seconds, Go 1.22 and later; "-"
// before), the longest as its histogram bucket's upper bound and the total
// as the sum of bucket midpoints.
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"
)

const pausesMetric = "/sched/pauses/total/other:seconds"

// deep30 parks under 30 frames of main.deep.
func deep30() { deep(29) }

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func pauses() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: pausesMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// pauseText: "<count> <longest> <total>" of the pauses between two reads.
func pauseText(before, after *metrics.Float64Histogram) string {
	if before == nil || after == nil {
		return "- - -"
	}
	var n uint64
	longest, total := 0.0, 0.0
	for i, c := range after.Counts {
		d := c - before.Counts[i]
		if d == 0 {
			continue
		}
		lo, hi := after.Buckets[i], after.Buckets[i+1]
		if math.IsInf(hi, 1) {
			hi = lo
		}
		if math.IsInf(lo, -1) {
			lo = hi
		}
		n += d
		longest = hi
		total += float64(d) * (lo + hi) / 2
	}
	return fmt.Sprintf("%d %.6f %.6f", n, longest, total)
}

// timeOwnWrites writes the profile at debug=1 and debug=2 three times each
// (to io.Discard) and records what each cost.
func timeOwnWrites(dir string) {
	var out string
	for _, debug := range []int{1, 1, 1, 2, 2, 2} {
		p0, c0, t0 := pauses(), cpuSeconds(), time.Now()
		if err := pprof.Lookup("goroutine").WriteTo(io.Discard, debug); err != nil {
			panic(err)
		}
		wall, cpu := time.Since(t0).Seconds(), cpuSeconds()-c0
		out += fmt.Sprintf("debug=%d %.6f %.6f %s\n", debug, wall, cpu, pauseText(p0, pauses()))
	}
	if err := os.WriteFile(filepath.Join(dir, "own.txt"), []byte(out), 0o644); err != nil {
		panic(err)
	}
}
