// Allocation patterns for the oracle target. Each function allocates in one
// recognisable way so that a mismatch between goheap2pprof and the runtime's
// own heap profile points at the feature that differs (inlining, generics,
// runtime frames, stack truncation, size classes, ...).
//
// Live objects go into package-level variables so they are still in use when
// the profile is written; garbage is dropped before the publishing GCs so the
// profile also carries freed objects.
package main

import "strconv"

// Retained objects, one variable per pattern.
var (
	keepInlined  [][]byte
	keepInts     [][]int
	keepStrs     [][]string
	keepClosure  []*[64]byte
	keepPoint    []point
	keepTree     *tree
	keepWorkers  [][]byte
	keepDeep     []byte
	keepLarge    [][]byte
	keepTiny     []*[3]byte
	keepTinyStr  []string
	keepMap      map[int]string
	keepConcat   []string
	keepBytes    [][]byte
	keepAppend   []int
	keepIface    []interface{}
	keepStack    *stack[float64]
	garbageSink  []byte
	garbageCount int
)

// Two levels of inlining: leafAlloc is inlined into midAlloc, which is inlined
// into allocInlined, so one stack entry per level shares the physical frame.
func leafAlloc(n int) []byte { return make([]byte, n) }

func midAlloc(n int) []byte { return leafAlloc(n * 2) }

//go:noinline
func allocInlined() {
	for i := 0; i < 20; i++ {
		keepInlined = append(keepInlined, midAlloc(24+i))
	}
}

// genericSlice has two instantiations with different shapes (int, string).
//
//go:noinline
func genericSlice[T any](n int) []T { return make([]T, n) }

// stack is a generic type whose method allocates.
type stack[T any] struct{ items []T }

//go:noinline
func (s *stack[T]) push(v T) { s.items = append(s.items, v) }

//go:noinline
func allocGeneric() {
	for i := 0; i < 10; i++ {
		keepInts = append(keepInts, genericSlice[int](100))
		keepStrs = append(keepStrs, genericSlice[string](50))
	}
	keepStack = &stack[float64]{}
	for i := 0; i < 100; i++ {
		keepStack.push(float64(i))
	}
}

//go:noinline
func allocClosure() {
	count := 7
	mk := func() *[64]byte {
		b := new([64]byte)
		b[0] = byte(count)
		return b
	}
	for i := 0; i < count; i++ {
		keepClosure = append(keepClosure, mk())
	}
}

// point has a value-receiver method, tree a pointer-receiver one.
type point struct{ x, y int }

//go:noinline
func (p point) neighbours() []point {
	return []point{{p.x - 1, p.y}, {p.x + 1, p.y}, {p.x, p.y - 1}, {p.x, p.y + 1}}
}

type tree struct {
	left, right *tree
	value       int
}

//go:noinline
func (t *tree) insert(v int) *tree {
	if t == nil {
		return &tree{value: v}
	}
	if v < t.value {
		t.left = t.left.insert(v)
	} else {
		t.right = t.right.insert(v)
	}
	return t
}

//go:noinline
func allocMethods() {
	for i := 0; i < 5; i++ {
		keepPoint = append(keepPoint, point{i, i}.neighbours()...)
	}
	for _, v := range []int{50, 20, 80, 10, 30, 70, 90} {
		keepTree = keepTree.insert(v)
	}
}

// worker runs on its own goroutine; its stack ends in runtime.goexit.
//
//go:noinline
func worker(id int, out chan<- []byte) {
	var last []byte
	for i := 0; i < 50; i++ {
		last = make([]byte, 256+id*64) // all but the last one become garbage
	}
	out <- last
}

//go:noinline
func allocGoroutines() {
	const workers = 4
	out := make(chan []byte, workers)
	for id := 0; id < workers; id++ {
		go worker(id, out)
	}
	for i := 0; i < workers; i++ {
		keepWorkers = append(keepWorkers, <-out)
	}
}

// recurse allocates at depth 0 of a 200-frame recursion, deeper than any
// profile stack limit (32 up to Go 1.22, 128 by default since 1.23).
//
//go:noinline
func recurse(depth int) []byte {
	if depth == 0 {
		return make([]byte, 1000)
	}
	return recurse(depth - 1)
}

//go:noinline
func allocDeep() { keepDeep = recurse(200) }

//go:noinline
func allocLarge() {
	for i := 0; i < 3; i++ {
		keepLarge = append(keepLarge, make([]byte, 40<<10+i*(32<<10)))
	}
	for i := 0; i < 3; i++ {
		garbageSink = make([]byte, 1<<20) // freed: overwritten before GC
	}
}

// allocTiny makes pointer-free objects under 16 bytes (the tiny allocator).
//
//go:noinline
func allocTiny() {
	for i := 0; i < 30; i++ {
		keepTiny = append(keepTiny, new([3]byte))
		keepTinyStr = append(keepTinyStr, strconv.Itoa(1000+i))
	}
}

// allocGarbage makes objects that are all unreachable at the publishing GC.
//
//go:noinline
func allocGarbage() {
	for i := 0; i < 1000; i++ {
		b := make([]byte, 512)
		garbageCount += len(b)
		garbageSink = b
	}
	garbageSink = nil
}

//go:noinline
func allocMap() {
	keepMap = make(map[int]string)
	for i := 0; i < 2000; i++ {
		keepMap[i] = "v"
	}
}

//go:noinline
func allocStrings() {
	prefix := "item-"
	for i := 0; i < 20; i++ {
		s := prefix + strconv.Itoa(i*7919) + "-suffix"
		keepConcat = append(keepConcat, s)
		keepBytes = append(keepBytes, []byte(s))
		keepConcat = append(keepConcat, string(keepBytes[len(keepBytes)-1]))
	}
}

// allocAppend grows one slice from one call site through many size classes.
//
//go:noinline
func allocAppend() {
	for i := 0; i < 3000; i++ {
		keepAppend = append(keepAppend, i)
	}
}

// allocInterface converts non-pointer values to interfaces (runtime.convT*).
//
//go:noinline
func allocInterface() {
	for i := 0; i < 10; i++ {
		keepIface = append(keepIface, int64(i)+1000, point{i, -i}, "s"+strconv.Itoa(i))
	}
}

// allocAll runs every pattern once.
func allocAll() {
	allocInlined()
	allocGeneric()
	allocClosure()
	allocMethods()
	allocGoroutines()
	allocDeep()
	allocLarge()
	allocTiny()
	allocGarbage()
	allocMap()
	allocStrings()
	allocAppend()
	allocInterface()
}

// phaseTwoObjects x phaseTwoSize bytes are retained by phaseTwo; the -base
// test expects exactly their product as the inuse_space difference.
const (
	phaseTwoObjects = 1000
	phaseTwoSize    = 4096
)

// keepPhaseTwo is allocated up front so phaseTwo allocates only its objects.
var keepPhaseTwo = make([]*[phaseTwoSize]byte, 0, phaseTwoObjects)

//go:noinline
func phaseTwo() {
	for i := 0; i < phaseTwoObjects; i++ {
		keepPhaseTwo = append(keepPhaseTwo, new([phaseTwoSize]byte))
	}
}

// sizedObjects objects of a size given at run time are retained by each call
// of allocSized, all from the same call site.
const sizedObjects = 1000

// keepSized is allocated up front (room for two calls) so allocSized
// allocates only its objects.
var keepSized = make([][]byte, 0, 2*sizedObjects)

//go:noinline
func allocSized(size int) {
	for i := 0; i < sizedObjects; i++ {
		keepSized = append(keepSized, make([]byte, size))
	}
}
