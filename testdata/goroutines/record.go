// The "record" mode of the oracle (tests/e2e/goroutines_test.sh, torn
// stacks): goroutines created and ending fast, each of which parks twice
// under a recursion of random depth and, right before each park, records
// its own stack with runtime.Callers. A capture from outside taken
// meanwhile must return, for each goroutine it shows asleep, exactly one of
// the stacks that goroutine recorded: a stack read while the goroutine
// moved (torn) would be a mix of two.
//
// On SIGUSR1 the spawners stop; once every recording goroutine has ended,
// <dir>/records.json is written, then <dir>/recorded:
//
//	{"stacks": [["main.parkRecorded main.go:12", ...], ...],  // main.* frames, innermost first
//	 "goroutines": {"<goid>": [first stack, second stack]}}
package main

import (
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The stacks recorded, each once (most goroutines repeat a few stacks):
// a lookup of a known stack takes no lock.
var (
	stackIndex sync.Map // a stack's PCs, as a string of bytes -> int
	stacksMu   sync.Mutex
	stackPCs   [][]uintptr
	recordsMu  sync.Mutex
	records    []goroutineRecord // appended by each goroutine as it ends
)

type goroutineRecord struct {
	goid   uint64
	stacks [2]int
}

var (
	recording  sync.WaitGroup // the recording goroutines
	live       int32          // recording goroutines not ended
	recordStop int32          // set by SIGUSR1: the spawners return
)

// currentGoid parses the header runtime.Stack writes: "goroutine 7 [running]:".
func currentGoid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	fields := strings.Fields(string(buf[:n]))
	id, _ := strconv.ParseUint(fields[1], 10, 64)
	return id
}

func stackNumber(pcs []uintptr) int {
	key := make([]byte, 8*len(pcs))
	for i, pc := range pcs {
		binary.LittleEndian.PutUint64(key[8*i:], uint64(pc))
	}
	if n, ok := stackIndex.Load(string(key)); ok {
		return n.(int)
	}
	stacksMu.Lock()
	defer stacksMu.Unlock()
	if n, ok := stackIndex.Load(string(key)); ok {
		return n.(int)
	}
	stackIndex.Store(string(key), len(stackPCs))
	stackPCs = append(stackPCs, append([]uintptr(nil), pcs...))
	return len(stackPCs) - 1
}

// recordStack stores its caller's stack as the goroutine's stack number
// *n and returns how long to sleep: the caller sleeps on the same line, so
// that the frames of its park are the frames recorded here, line for line.
//
//go:noinline
func recordStack(n *int) time.Duration {
	var pcs [128]uintptr
	*n = stackNumber(pcs[:runtime.Callers(2, pcs[:])])
	return time.Duration(2+rand.Intn(8)) * time.Millisecond
}

// parkRecorded parks under depth frames of its own.
//
//go:noinline
func parkRecorded(n *int, depth int) int {
	if depth > 0 {
		return parkRecorded(n, depth-1) + 1
	}
	time.Sleep(recordStack(n))
	return 0
}

// recorded parks twice at random depths, then ends.
func recorded() {
	defer recording.Done()
	defer atomic.AddInt32(&live, -1)
	r := goroutineRecord{goid: currentGoid(), stacks: [2]int{-1, -1}}
	parkRecorded(&r.stacks[0], rand.Intn(40))
	parkRecorded(&r.stacks[1], rand.Intn(40))
	recordsMu.Lock()
	records = append(records, r)
	recordsMu.Unlock()
}

func spawnRecorded(spawners *sync.WaitGroup) {
	defer spawners.Done()
	for atomic.LoadInt32(&recordStop) == 0 {
		// At most 2,000 at a time: on a loaded machine the goroutines
		// would otherwise pile up faster than they end.
		if atomic.LoadInt32(&live) < 2000 {
			atomic.AddInt32(&live, 250)
			recording.Add(250)
			for i := 0; i < 250; i++ {
				go recorded()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startRecording runs two spawners (up to 50,000 goroutines a second) until
// SIGUSR1, then writes the records.
func startRecording(dir string) {
	// Fewer GC cycles: each one's stop parks the churn in semacquire.
	debug.SetGCPercent(1000)
	var spawners sync.WaitGroup
	spawners.Add(2)
	go spawnRecorded(&spawners)
	go spawnRecorded(&spawners)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		atomic.StoreInt32(&recordStop, 1)
		spawners.Wait()
		recording.Wait()
		writeRecords(dir)
	}()
}

// frameLines: the main.* frames of a stack as "function file:line".
func frameLines(pcs []uintptr) []string {
	var out []string
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "main.") {
			out = append(out, f.Function+" "+filepath.Base(f.File)+":"+strconv.Itoa(f.Line))
		}
		if !more {
			return out
		}
	}
}

func writeRecords(dir string) {
	stacks := make([][]string, len(stackPCs))
	for i, pcs := range stackPCs {
		stacks[i] = frameLines(pcs)
	}
	byGoid := make(map[string][2]int, len(records))
	for _, r := range records {
		byGoid[strconv.FormatUint(r.goid, 10)] = r.stacks
	}
	data, err := json.Marshal(map[string]interface{}{"stacks": stacks, "goroutines": byGoid})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "records.json"), data, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "recorded"), nil, 0o644)
	}
	if err != nil {
		panic(err)
	}
}
