// Command nopprof never references runtime/pprof or runtime.MemProfile, so
// the linker compiles heap profiling out (runtime.disableMemoryProfiling)
// even though the program allocates. goheap2pprof must say so.
package main

import (
	"fmt"
	"os"
	"time"
)

var keep [][]byte

func main() {
	for i := 0; i < 1000; i++ {
		keep = append(keep, make([]byte, 4096))
	}
	fmt.Printf("READY %d\n", os.Getpid())
	for {
		time.Sleep(time.Hour)
	}
}
