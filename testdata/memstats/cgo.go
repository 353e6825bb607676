//go:build withcgo

// Built with -tags withcgo and CGO_ENABLED=1 the program is linked
// externally, which moves every variable the memory-statistics read uses.
package main

/*
static int twice(int x) { return 2 * x; }
*/
import "C"

var cgoResult int

func init() { cgoResult = int(C.twice(21)) }
