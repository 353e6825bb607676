package main

// crashView is -crash-view and -quiet-view, the core-file oracles of
// tests/e2e/memstats_variants_test.sh: the target takes its own view and
// writes it without allocating, then dies of SIGABRT (-crash-view;
// GOTRACEBACK=crash gives a core) or blocks (-quiet-view, for a gcore), so
// the core holds exactly the memory the view was taken from. ReadMemStats comes first here: its mcache flush would otherwise
// move the counters between metrics.Read and the core; after it, the
// metrics and MemStats both describe the memory the core keeps.
//
// The view is text, one value a line ("M Alloc 123", "P 0 ns end",
// "B 1 8 mallocs frees", "U /gc/...:bytes 42", ...), built with strconv's
// Append functions in a buffer allocated beforehand and written with
// syscall.Write; memstats_crashview.py turns it into the JSON of -out.

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
)

// Written once the view is out; a []byte made at init, since converting a
// string could allocate.
var viewLine = []byte("VIEW\n")

// view appends "tag name value" lines to a buffer that must never grow.
type view struct{ b []byte }

func (w *view) u(tag, name string, v uint64) {
	w.b = append(w.b, tag...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '\n')
}

// i writes "tag index value" (strconv.Itoa would allocate from 100 on).
func (w *view) i(tag string, index int, v uint64) {
	w.b = append(w.b, tag...)
	w.b = append(w.b, ' ')
	w.b = strconv.AppendInt(w.b, int64(index), 10)
	w.b = append(w.b, ' ')
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '\n')
}

func crashView(fd int, samples []metrics.Sample, buf []byte, abort bool) {
	// Writing the view must not grow this goroutine's stack either (a new
	// 32 KiB stack after the view was seen with go1.27.3): grow it first.
	growStack(0)
	runtime.ReadMemStats(&ms)
	metrics.Read(samples)
	goroutines := runtime.NumGoroutine()
	threads, _ := runtime.ThreadCreateProfile(nil)

	w := view{b: buf[:0]}
	w.u("M", "Alloc", ms.Alloc)
	w.u("M", "TotalAlloc", ms.TotalAlloc)
	w.u("M", "Sys", ms.Sys)
	w.u("M", "Lookups", ms.Lookups)
	w.u("M", "Mallocs", ms.Mallocs)
	w.u("M", "Frees", ms.Frees)
	w.u("M", "HeapAlloc", ms.HeapAlloc)
	w.u("M", "HeapSys", ms.HeapSys)
	w.u("M", "HeapIdle", ms.HeapIdle)
	w.u("M", "HeapInuse", ms.HeapInuse)
	w.u("M", "HeapReleased", ms.HeapReleased)
	w.u("M", "HeapObjects", ms.HeapObjects)
	w.u("M", "StackInuse", ms.StackInuse)
	w.u("M", "StackSys", ms.StackSys)
	w.u("M", "MSpanInuse", ms.MSpanInuse)
	w.u("M", "MSpanSys", ms.MSpanSys)
	w.u("M", "MCacheInuse", ms.MCacheInuse)
	w.u("M", "MCacheSys", ms.MCacheSys)
	w.u("M", "BuckHashSys", ms.BuckHashSys)
	w.u("M", "GCSys", ms.GCSys)
	w.u("M", "OtherSys", ms.OtherSys)
	w.u("M", "NextGC", ms.NextGC)
	w.u("M", "LastGC", ms.LastGC)
	w.u("M", "PauseTotalNs", ms.PauseTotalNs)
	w.u("M", "NumGC", uint64(ms.NumGC))
	w.u("M", "NumForcedGC", uint64(ms.NumForcedGC))
	w.u("Z", "EnableGC", boolUint(ms.EnableGC))
	w.u("Z", "DebugGC", boolUint(ms.DebugGC))
	w.b = append(w.b, "F GCCPUFraction "...)
	w.b = strconv.AppendFloat(w.b, ms.GCCPUFraction, 'g', -1, 64)
	w.b = append(w.b, '\n')
	for i := range ms.PauseNs {
		w.i("P", i, ms.PauseNs[i])
		w.i("Q", i, ms.PauseEnd[i])
	}
	for i, c := range ms.BySize {
		w.i("S", i, uint64(c.Size))
		w.i("A", i, c.Mallocs)
		w.i("R", i, c.Frees)
	}
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			w.u("U", s.Name, s.Value.Uint64())
		}
	}
	w.u("G", "num_goroutine", uint64(goroutines))
	w.u("T", "threads", uint64(threads))
	w.b = append(w.b, "END\n"...)
	syscall.Write(fd, w.b)
	syscall.Write(1, viewLine)
	if abort {
		syscall.Kill(os.Getpid(), syscall.SIGABRT)
	}
	// -quiet-view: stay as the view left the memory until stdin closes
	// (a gcore is taken now).
	for {
		if n, _ := syscall.Read(0, buf[:cap(buf)]); n <= 0 {
			os.Exit(0)
		}
	}
}

// growStack needs a 64 KiB stack; the stack keeps that size until a GC
// shrinks it, and GC is not running while the view is written.
//
//go:noinline
func growStack(n int) byte {
	var pad [48 << 10]byte
	pad[n] = byte(n)
	return pad[(n*7)%len(pad)]
}

func boolUint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
