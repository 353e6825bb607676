// heapvars is the target of the stripped-binary tests: a program that links
// runtime/pprof (so the heap profiler and runtime.memProfileInternal /
// runtime.MemProfile are live), built stripped and unstripped. The tests read
// only its file; running it just prints "ok".
package main

import (
	"fmt"
	"io"
	"runtime/pprof"
)

var sink [][]byte

func main() {
	for i := 0; i < 100; i++ {
		sink = append(sink, make([]byte, 1<<12))
	}
	if err := pprof.WriteHeapProfile(io.Discard); err != nil {
		panic(err)
	}
	fmt.Println("ok", len(sink))
}
