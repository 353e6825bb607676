// fuzzseed is the Go program behind the Go ELF seed of the elf fuzz target
// (scripts/make-fuzz-seeds.sh): as small as a Go binary gets while the heap
// profiler (runtime.MemProfile, mProf_*) stays live, so the seed reaches
// the build info, the pclntab and the runtime-variable code scan.
package main

import "runtime"

var sink [][]byte

func main() {
	for i := 0; i < 100; i++ {
		sink = append(sink, make([]byte, 1<<12))
	}
	var records [8]runtime.MemProfileRecord
	n, _ := runtime.MemProfile(records[:], true)
	println(n, len(sink))
}
