// Command oomcrash grows its heap in one function, growHeap, until the
// runtime cannot map more memory. Run under `ulimit -v` with
// GOTRACEBACK=crash, it dies of "fatal error: out of memory" and SIGABRT, and
// leaves a core whose heap profile must name growHeap as the top in-use site
// (tests/e2e/core_test.sh). It prints "GROWING" when it starts.
package main

import (
	"os"
	"runtime/pprof"
)

// retained keeps every block alive, so the heap only grows.
var retained [][]byte

// growHeap allocates 1 MiB blocks forever. Blocks are larger than the
// default MemProfileRate (512 KiB), so nearly every one is sampled. They are
// never written: untouched pages cost no memory and leave holes in the core,
// while still counting against the address-space limit.
//
//go:noinline
func growHeap() {
	for {
		retained = append(retained, make([]byte, 1<<20))
	}
}

func main() {
	// Keeps heap profiling linked in (the linker turns it off in programs
	// that never read the profile).
	if pprof.Lookup("heap") == nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("GROWING\n")
	growHeap()
}
