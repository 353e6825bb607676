//go:build cgo

// Importing "C" makes the cgo build link externally (runtime.text != .text).

package main

import "C"
