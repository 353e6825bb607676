//go:build !cgo

package main

func cMalloc(int) bool { return false }
