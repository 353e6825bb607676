// The target of the goroutine leak report (tests/e2e/goroutine_leak_test.sh):
// three creation sites whose goroutines park, for `goheap2pprof growth
// --goroutines` to tell apart.
//
//	goroutineleak <dir> growth   # leak 100/s, a pool of 1,000, churn
//	goroutineleak <dir> marked   # 5 leaked goroutines and the runtime's own leak profile
//
// growth: leakOne starts 100 goroutines a second, each parked forever on a
// channel of its own; a pool of 1,000 workers waits on one shared channel;
// churnOne goroutines sleep 10 ms and exit, 2,000 a second. The GC runs
// every 500 ms, so that each parked goroutine's waitsince is stamped.
//
// marked: the pool and 5 goroutines parked on channels nothing else can
// reach; then the runtime's goroutineleak profile, if this runtime has one
// (Go 1.27, or 1.26 built with GOEXPERIMENT=goroutineleakprofile), is
// written at debug=1 (leak.txt) and debug=2 (leak2.txt): writing it runs the
// GC that marks them leaked. Without one, <dir>/noleakprofile is written.
//
// <dir>/ready appears once the goroutines are in place (and the files written).
package main

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"
)

var jobs = make(chan int)

func worker() {
	for range jobs {
	}
}

// parkOnOwnChannel waits on a channel only it holds: forever, and
// unreachable, so a leak-detecting GC marks it leaked.
func parkOnOwnChannel() {
	c := make(chan int)
	<-c
}

func leakOne() { parkOnOwnChannel() }

func leak(perSecond int) {
	for {
		for i := 0; i < perSecond/10; i++ {
			go leakOne()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func churnOne() { time.Sleep(10 * time.Millisecond) }

func churn() {
	for {
		for i := 0; i < 20; i++ {
			go churnOne()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func collect() {
	for {
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
	}
}

func write(dir, name string, p *pprof.Profile, debug int) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		panic(err)
	}
	if err := p.WriteTo(f, debug); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
}

func touch(dir, name string) {
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		panic(err)
	}
}

func main() {
	dir, mode := os.Args[1], os.Args[2]
	for i := 0; i < 1000; i++ {
		go worker()
	}
	switch mode {
	case "growth":
		go leak(100)
		go churn()
		go collect()
	case "marked":
		for i := 0; i < 5; i++ {
			go leakOne()
		}
		time.Sleep(200 * time.Millisecond)
		if p := pprof.Lookup("goroutineleak"); p != nil {
			write(dir, "leak.txt", p, 1)
			write(dir, "leak2.txt", p, 2)
		} else {
			touch(dir, "noleakprofile")
		}
	}
	touch(dir, "ready")
	// Asleep rather than in select{}: with every other goroutine parked for
	// good (marked), the runtime would otherwise call it a deadlock and exit.
	for {
		time.Sleep(time.Hour)
	}
}
