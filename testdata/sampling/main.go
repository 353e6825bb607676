// Command sampling is the target of the tests of heap sampling as the
// runtime sees it and of `goheap2pprof enable-sampling`. It never uses
// runtime/pprof or runtime.MemProfile, so the linker sets
// runtime.disableMemoryProfiling and the runtime starts with
// MemProfileRate = 0, as in many production services.
//
//	sampling            starts with sampling compiled out, as linked
//	sampling -setrate N assigns runtime.MemProfileRate = N first thing in main
//
// Eight worker goroutines allocate all along (short-lived buffers they fill
// and verify), and carry out the commands read from standard input, one per
// line, each answered with one line on standard output:
//
//	keep <site> <count> <size>  the workers allocate count objects of size
//	                            bytes between them at keep<site> (site A-H)
//	                            and keep them; then two GCs publish the heap
//	                            profile: "kept <site> <count> <bytes>"
//	check                       every kept object still holds its pattern:
//	                            "check ok <objects> <bytes> <digest>", the
//	                            same for the same commands in any run
//	quit                        "bye", and exit 0
//
// It prints "READY <pid>" once the workers run (after -setrate's keep of
// site A, if -keep-at-start is given), and exits 3 with "CORRUPT ..." if a
// buffer ever reads back wrong.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

const workers = 8

type job struct {
	site  byte
	count int // this worker's share
	size  int
	done  *sync.WaitGroup
}

// kept[w] holds worker w's kept objects, in the order allocated.
var (
	kept   [workers][][]byte
	keptMu sync.Mutex
	jobs   [workers]chan job
)

func fill(b []byte, seed uint32) {
	x := seed*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

func verify(b []byte, seed uint32) bool {
	x := seed*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		if b[i] != byte(x) {
			return false
		}
	}
	return true
}

// One function per site, so that each is its own leaf in the profile.

//go:noinline
func keepA(n int) []byte { return make([]byte, n) }

//go:noinline
func keepB(n int) []byte { return make([]byte, n) }

//go:noinline
func keepC(n int) []byte { return make([]byte, n) }

//go:noinline
func keepD(n int) []byte { return make([]byte, n) }

//go:noinline
func keepE(n int) []byte { return make([]byte, n) }

//go:noinline
func keepF(n int) []byte { return make([]byte, n) }

//go:noinline
func keepG(n int) []byte { return make([]byte, n) }

//go:noinline
func keepH(n int) []byte { return make([]byte, n) }

var sites = map[byte]func(int) []byte{
	'A': keepA, 'B': keepB, 'C': keepC, 'D': keepD,
	'E': keepE, 'F': keepF, 'G': keepG, 'H': keepH,
}

//go:noinline
func churnBuffer(n int) []byte { return make([]byte, n) }

// worker allocates short-lived buffers all along, and does its share of
// each keep.
func worker(w int) {
	var ring [32][]byte
	for i := 0; ; i++ {
		select {
		case j := <-jobs[w]:
			alloc := sites[j.site]
			mine := make([][]byte, 0, j.count)
			for k := 0; k < j.count; k++ {
				b := alloc(j.size)
				fill(b, uint32(j.site)<<24^uint32(w)<<16^uint32(k))
				mine = append(mine, b)
			}
			keptMu.Lock()
			kept[w] = append(kept[w], mine...)
			keptMu.Unlock()
			j.done.Done()
		default:
		}
		b := churnBuffer(512 + (i%8)*512)
		fill(b, uint32(i))
		if old := ring[i%len(ring)]; old != nil && !verify(old, uint32(i-len(ring))) {
			fmt.Printf("CORRUPT worker %d buffer %d\n", w, i-len(ring))
			os.Exit(3)
		}
		ring[i%len(ring)] = b
		if i%64 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// keep splits count objects between the workers and waits for them, then
// publishes the heap profile with two GCs.
func keep(site byte, count, size int) {
	var done sync.WaitGroup
	for w := 0; w < workers; w++ {
		share := count / workers
		if w < count%workers {
			share++
		}
		done.Add(1)
		jobs[w] <- job{site: site, count: share, size: size, done: &done}
	}
	done.Wait()
	runtime.GC()
	runtime.GC()
}

// check verifies every kept object and digests them in a fixed order.
func check() string {
	keptMu.Lock()
	defer keptMu.Unlock()
	h := fnv.New64a()
	objects, bytes := 0, 0
	for w := 0; w < workers; w++ {
		for _, b := range kept[w] {
			objects++
			bytes += len(b)
			h.Write(b)
		}
	}
	return fmt.Sprintf("check ok %d %d %016x", objects, bytes, h.Sum64())
}

func main() {
	setrate := flag.Int("setrate", -1, "assign runtime.MemProfileRate = N first (-1: leave it)")
	keepAtStart := flag.String("keep-at-start", "", "a keep command run before READY: <site> <count> <size>")
	flag.Parse()
	if *setrate >= 0 {
		runtime.MemProfileRate = *setrate
	}
	for w := 0; w < workers; w++ {
		jobs[w] = make(chan job)
		go worker(w)
	}
	if *keepAtStart != "" {
		run(strings.Fields("keep " + *keepAtStart))
	}
	fmt.Printf("READY %d\n", os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if !run(strings.Fields(in.Text())) {
			return
		}
	}
	// Standard input closed: idle until killed, as a service would.
	select {}
}

// run carries out one command and prints its answer; false after quit.
func run(f []string) bool {
	switch {
	case len(f) == 4 && f[0] == "keep" && len(f[1]) == 1 && sites[f[1][0]] != nil:
		count, err1 := strconv.Atoi(f[2])
		size, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || count < 0 || size <= 0 {
			fmt.Println("error bad keep")
			return true
		}
		keep(f[1][0], count, size)
		fmt.Printf("kept %s %d %d\n", f[1], count, count*size)
	case len(f) == 1 && f[0] == "check":
		fmt.Println(check())
	case len(f) == 1 && f[0] == "quit":
		fmt.Println("bye")
		return false
	default:
		fmt.Printf("error unknown command %q\n", strings.Join(f, " "))
	}
	return true
}
