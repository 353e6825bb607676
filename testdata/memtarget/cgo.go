//go:build cgo

package main

// #include <stdlib.h>
// #include <string.h>
// char *memtarget_held;  /* global, so the compiler keeps the malloc and memset */
// static int hold(size_t n) {
//   memtarget_held = malloc(n);
//   if (memtarget_held == NULL) return 0;
//   memset(memtarget_held, 1, n);  /* resident, not merely reserved */
//   return 1;
// }
import "C"

func cMalloc(mib int) bool { return C.hold(C.size_t(mib)<<20) != 0 }
