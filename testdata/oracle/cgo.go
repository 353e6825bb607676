//go:build withcgo

// Built with -tags withcgo and CGO_ENABLED=1, the oracle is linked by the
// system linker (external linking), which changes the ELF layout goheap2pprof
// has to read (.text start differs from runtime.text, GNU build ID present).
package main

/*
static int twice(int x) { return 2 * x; }
*/
import "C"

var cgoResult int

func init() { cgoResult = int(C.twice(21)) }
