// oomgrower grows its heap by a few MiB every 100 ms in one function,
// growHeap, keeping everything reachable, until the kernel kills it (in a
// memory cgroup with a limit) or it reaches -max-mib and then idles. It is
// the target of the watch tests: the profile taken before the OOM kill must
// name growHeap as the top in-use site.
//
//	oomgrower [-step-mib 4] [-every 100ms] [-max-mib 0 (no cap)] [-exit-code -1]
//
// Prints "READY <pid>" once profiling is on and growth starts, and
// "CAPPED <mib>" when it reached -max-mib. With -exit-code N >= 0 it exits
// with N once capped (after -linger).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"
)

// Everything growHeap allocated: reachable, so nothing is freed.
var kept [][]byte

//go:noinline
func growHeap(stepMiB int) {
	for i := 0; i < stepMiB; i++ {
		b := make([]byte, 1<<20)
		// Touch every page so the memory is resident and charged to the
		// cgroup, not just reserved.
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		kept = append(kept, b)
	}
}

func main() {
	stepMiB := flag.Int("step-mib", 4, "MiB allocated per step")
	every := flag.Duration("every", 100*time.Millisecond, "time between steps")
	maxMiB := flag.Int("max-mib", 0, "stop growing at this many MiB (0: never)")
	exitCode := flag.Int("exit-code", -1, "exit with this code once capped (-1: idle forever)")
	linger := flag.Duration("linger", 3*time.Second, "time to stay capped before -exit-code")
	flag.Parse()
	// Linking runtime/pprof keeps heap profiling on (the linker disables it
	// in programs that never read the profile).
	_ = pprof.Lookup("heap").WriteTo(io.Discard, 0)
	fmt.Printf("READY %d\n", os.Getpid())
	for {
		if *maxMiB > 0 && len(kept) >= *maxMiB {
			fmt.Printf("CAPPED %d\n", len(kept))
			if *exitCode >= 0 {
				time.Sleep(*linger)
				os.Exit(*exitCode)
			}
			for {
				time.Sleep(time.Hour)
			}
		}
		growHeap(*stepMiB)
		time.Sleep(*every)
	}
}
