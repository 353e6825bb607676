// frames prints, for stacks taken with runtime.Callers from inlined and
// non-inlined helpers, each raw return PC together with the frame
// runtime.CallersFrames gives for that PC alone. The goheap2pprof pclntab
// tests must decode the same frames from the binary's file.
//
// Output lines:
//
//	anchor <hex runtime address of main.anchor>
//	pc <tag> <hex pc> <1 if inlined else 0>\t<function>\t<file>\t<line>
package main

import (
	"fmt"
	"reflect"
	"runtime"
)

//go:noinline
func anchor() {}

// probe records the stack of its caller chain. It is too big to inline.
func probe(tag string) {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs)
	for _, pc := range pcs[:n] {
		f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
		inlined := 0
		if f.Func == nil {
			inlined = 1
		}
		fmt.Printf("pc %s %x %d\t%s\t%s\t%d\n", tag, pc, inlined, f.Function, f.File, f.Line)
	}
}

//go:noinline
func leaf() { probe("leaf") }

// Small enough to be inlined into their callers.
func inlInner(tag string) { probe(tag) }
func inlOuter(tag string) { inlInner(tag) }

//go:noinline
func nestedInline() { inlOuter("nested") }

//go:noinline
func genNoinline[T any](x T) { probe(fmt.Sprint("gen-noinline-", x)) }

func genInline[T any](tag string, x T) { probe(tag) }

//go:noinline
func genCaller() {
	genNoinline(1)
	genNoinline("s")
	genInline("gen-inline-int", 2)
	genInline("gen-inline-string", "t")
}

type T struct{ name string }

//go:noinline
func (t *T) Method() { probe("method-" + t.name) }

func (t T) InlMethod() { probe("inl-method") }

//go:noinline
func methodCaller() {
	t := &T{name: "ptr"}
	t.Method()
	T{}.InlMethod()
}

//go:noinline
func callIt(f func()) { f() }

//go:noinline
func closures() {
	n := 3
	callIt(func() { probe(fmt.Sprint("closure-", n)) })
	func() { probe("closure-immediate") }()
}

// deep recursion through an inlined helper so inline groups repeat.
//
//go:noinline
func recurse(d int) {
	if d == 0 {
		inlOuter("recurse")
		return
	}
	recurse(d - 1)
}

func main() {
	fmt.Printf("anchor %x\n", reflect.ValueOf(anchor).Pointer())
	anchor()
	leaf()
	nestedInline()
	genCaller()
	methodCaller()
	closures()
	recurse(3)
	done := make(chan bool)
	go func() {
		inlOuter("goroutine")
		done <- true
	}()
	<-done
}
