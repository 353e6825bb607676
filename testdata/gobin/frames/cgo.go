//go:build cgo

// Importing "C" makes the cgo build of this program link externally, which
// is the layout the pclntab tests need (runtime.text != .text start).

package main

import "C"
