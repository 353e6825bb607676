// damagedtarget: a Go program whose heap-profile bucket list is damaged on
// purpose, as a corrupt or hostile target would present it to a reader from
// outside: the first bucket's allnext points back to itself, a cycle.
// goheap2pprof's walk must refuse it (a malformed list) without harm to the
// agent that reads it. The program's own collector is off, so the runtime
// never walks the damaged list itself (only a GC or runtime.MemProfile
// would), and the program lives on.
//
// Build with -ldflags=-checklinkname=0 (the runtime's list head is reached
// with go:linkname). Prints "READY <pid>" once the list is damaged.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"
)

// The runtime's head of the list of memory-profile buckets (an
// atomic.UnsafePointer since Go 1.21: its value is its first word).
//
//go:linkname mbuckets runtime.mbuckets
var mbuckets unsafe.Pointer

var keep [][]byte

func main() {
	debug.SetGCPercent(-1)
	runtime.MemProfileRate = 1
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1024))
	}
	head := mbuckets
	if head == nil {
		fmt.Println("FAIL the runtime has no memory-profile bucket")
		os.Exit(1)
	}
	// bucket: next, allnext, typ, hash, size, nstk (runtime/mprof.go).
	allnext := (*unsafe.Pointer)(unsafe.Add(head, unsafe.Sizeof(uintptr(0))))
	*allnext = head
	fmt.Printf("READY %d\n", os.Getpid())
	for {
		time.Sleep(time.Hour)
	}
}
