// Command quiet links runtime/pprof (so heap profiling is compiled in) and
// then, depending on its flags, allocates or not:
//
//	quiet                 keep 4 MiB in 4 KiB objects (sampled at any rate), idle
//	quiet -rate0          set runtime.MemProfileRate = 0 first, as some programs do
//	quiet -big N          rate 1 and about N distinct heap buckets (a long list)
//	quiet -exit-after D   exit by itself D after printing READY
//	quiet -late-enable    run with GODEBUG=memprofilerate=0 (Go 1.20+): turns
//	                      sampling on (rate 524288) and then never allocates
//	                      again, so the bucket list stays empty while the rate
//	                      is positive: the "nothing sampled yet" state.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
)

var keep []any

// ready is static data: printing it does not allocate.
var ready = []byte("READY\n")

//go:noinline
func leaf(depth int, size int) []byte {
	if depth == 0 {
		return make([]byte, size)
	}
	return leaf(depth-1, size)
}

// pauseForever blocks in pause(2); unlike time.Sleep or a channel receive it
// never allocates.
func pauseForever() {
	for {
		syscall.Syscall(syscall.SYS_PAUSE, 0, 0, 0)
	}
}

func main() {
	rate0 := flag.Bool("rate0", false, "set runtime.MemProfileRate = 0 at startup")
	big := flag.Int("big", 0, "create about this many distinct heap buckets")
	exitAfter := flag.Duration("exit-after", 0, "exit by itself this long after READY")
	lateEnable := flag.Bool("late-enable", false, "enable sampling, then never allocate")
	flag.Parse()
	_ = pprof.Lookup("heap")
	if *lateEnable {
		runtime.MemProfileRate = 512 * 1024
		os.Stdout.Write(ready)
		pauseForever()
	}
	if *rate0 {
		runtime.MemProfileRate = 0
	}
	if *big > 0 {
		runtime.MemProfileRate = 1
		// Distinct (depth, size class) pairs give distinct buckets.
		for i := 0; i < *big; i++ {
			keep = append(keep, leaf(i%100, 16*(1+i/100)))
		}
	}
	for i := 0; i < 1024; i++ {
		keep = append(keep, make([]byte, 4096))
	}
	fmt.Printf("READY %d\n", os.Getpid())
	if *exitAfter > 0 {
		time.Sleep(*exitAfter)
		os.Exit(0)
	}
	pauseForever()
}
