// Command growthtarget is the end-to-end target of `goheap2pprof growth`:
// four allocation sites whose in-use bytes follow known shapes in wall time
// since start, so that the report's classes and slopes can be checked.
//
//	leak      keeps rate x elapsed bytes forever (4 KiB objects): STEADY GROWTH
//	          at exactly -leak-rate bytes per second
//	churn     a batch of 2-6 MiB (drawn at random each step) that lives for one
//	          step and is dropped: comes and goes, never growth
//	cache     a map of 64 KiB values that fills to -cache-bytes during
//	          -cache-fill, then stays full (with -cache-evict, replacing an
//	          eighth of its entries each step, as an LRU would): BOUNDED
//	sawtooth  grows to -saw-peak over each -saw-period, then is dropped: SAWTOOTH
//
// Every -step it updates the sites and runs two GCs, which publishes the heap
// profile (GC is otherwise off, so nothing is published between steps).
//
//	growthtarget [-rate N]                       # READY <pid>, then steps forever
//	growthtarget [-rate N] -snapshots DIR -count 12 -step 500ms
//
// With -snapshots, after each of -count steps it writes its own heap profile
// (pprof.Lookup("heap").WriteTo) to DIR/heap-NN.pb.gz, prints "SNAP NN" and
// waits for DIR/ack-NN before going on, so a capture from outside taken
// before the ack sees exactly what that file holds (GC is off meanwhile, so
// the writer's own allocations stay unpublished). It then prints DONE and
// idles.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"time"
)

// rateFromArgs finds "-rate N" before flag parsing, so the rate is set
// before main allocates.
func rateFromArgs() int {
	for i, arg := range os.Args {
		if (arg == "-rate" || arg == "--rate") && i+1 < len(os.Args) {
			if n, err := strconv.Atoi(os.Args[i+1]); err == nil {
				return n
			}
		}
	}
	return 0
}

func init() {
	if r := rateFromArgs(); r > 0 {
		runtime.MemProfileRate = r
	}
}

type sites struct {
	leaked    [][]byte
	leakBytes int64
	churn     [][]byte
	cache     map[int][]byte
	nextKey   int
	saw       [][]byte
	sawBytes  int64
	rng       *rand.Rand
}

var (
	leakRate   = flag.Int64("leak-rate", 2<<20, "bytes per second kept forever")
	cacheBytes = flag.Int64("cache-bytes", 4<<20, "size of the full cache")
	cacheFill  = flag.Duration("cache-fill", 1500*time.Millisecond, "time to fill the cache")
	sawPeak    = flag.Int64("saw-peak", 6<<20, "sawtooth peak bytes")
	sawPeriod  = flag.Duration("saw-period", 2*time.Second, "sawtooth period")
	step       = flag.Duration("step", 100*time.Millisecond, "time between steps")
	cacheEvict = flag.Bool("cache-evict", false, "replace entries of the full cache each step")
	snapDir    = flag.String("snapshots", "", "write the runtime's heap profile here each step")
	count      = flag.Int("count", 12, "steps with -snapshots")
	_          = flag.Int("rate", 0, "runtime.MemProfileRate (read before flag parsing)")
)

const cacheValue = 64 << 10

//go:noinline
func leakAlloc() []byte { return make([]byte, 4096) }

//go:noinline
func churnAlloc() []byte { return make([]byte, 8192) }

//go:noinline
func cacheAlloc() []byte { return make([]byte, cacheValue) }

//go:noinline
func sawAlloc() []byte { return make([]byte, 16384) }

func (s *sites) leak(elapsed time.Duration) {
	want := *leakRate * int64(elapsed) / int64(time.Second)
	for s.leakBytes+4096 <= want {
		s.leaked = append(s.leaked, leakAlloc())
		s.leakBytes += 4096
	}
}

func (s *sites) churnStep() {
	n := (2<<20 + s.rng.Int63n(4<<20)) / 8192
	s.churn = make([][]byte, 0, n)
	for i := int64(0); i < n; i++ {
		s.churn = append(s.churn, churnAlloc())
	}
}

func (s *sites) cacheStep(elapsed time.Duration) {
	full := int(*cacheBytes / cacheValue)
	want := full
	if elapsed < *cacheFill {
		want = int(int64(full) * int64(elapsed) / int64(*cacheFill))
	}
	// Full: evict the oldest eighth, as an LRU would, to insert as many.
	if *cacheEvict && len(s.cache) == full {
		for i := 0; i < full/8; i++ {
			delete(s.cache, s.nextKey-full+i)
		}
	}
	// One insertion site, so that the cache is one stack.
	for len(s.cache) < want {
		s.cache[s.nextKey] = cacheAlloc()
		s.nextKey++
	}
}

func (s *sites) sawStep(elapsed time.Duration) {
	phase := elapsed % *sawPeriod
	want := *sawPeak * int64(phase) / int64(*sawPeriod)
	if want < s.sawBytes {
		s.saw, s.sawBytes = nil, 0
	}
	for s.sawBytes+16384 <= want {
		s.saw = append(s.saw, sawAlloc())
		s.sawBytes += 16384
	}
}

func (s *sites) update(elapsed time.Duration) {
	s.leak(elapsed)
	s.churnStep()
	s.cacheStep(elapsed)
	s.sawStep(elapsed)
	// Twice: the second publishes what the first swept.
	runtime.GC()
	runtime.GC()
}

func writeSnapshot(dir string, n int) {
	name := filepath.Join(dir, fmt.Sprintf("heap-%02d.pb.gz", n))
	f, err := os.Create(name + ".tmp")
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(name+".tmp", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "growthtarget:", err)
		os.Exit(1)
	}
	fmt.Printf("SNAP %02d\n", n)
}

// waitAck waits up to a minute for DIR/ack-NN.
func waitAck(dir string, n int) {
	ack := filepath.Join(dir, fmt.Sprintf("ack-%02d", n))
	for i := 0; i < 6000; i++ {
		if _, err := os.Stat(ack); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "growthtarget: no", ack)
	os.Exit(1)
}

func main() {
	flag.Parse()
	debug.SetGCPercent(-1)
	s := &sites{cache: map[int][]byte{}, rng: rand.New(rand.NewSource(25))}
	start := time.Now()
	fmt.Printf("READY %d\n", os.Getpid())
	for i := 1; *snapDir == "" || i <= *count; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * *step)))
		s.update(time.Since(start))
		if *snapDir != "" {
			writeSnapshot(*snapDir, i)
			waitAck(*snapDir, i)
		}
	}
	fmt.Println("DONE")
	for {
		time.Sleep(time.Hour)
		runtime.KeepAlive(s)
	}
}
