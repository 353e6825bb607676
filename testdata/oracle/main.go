// Command oracle is the end-to-end test target of goheap2pprof. It allocates
// in many ways (see alloc.go), publishes the heap profile (two GCs, then GC
// off), writes its own heap profile -- the oracle -- and prints "READY <pid>".
// From then on the set of heap buckets and their published counts must not
// change, so a profile captured from outside at any later time must mean
// exactly the same as the oracle file.
//
//	oracle [-rate N] -out o.pb.gz                # READY <pid>, then idle
//	oracle -rate 1 -out o.pb.gz -selfcheck s.pb.gz
//	oracle -rate 1 -out o.pb.gz -phase2 [-out2 o2.pb.gz]
//	oracle -rate 1 -out o.pb.gz -phase2 -known [-out2 o2.pb.gz]
//
// -selfcheck waits 2 s after READY and writes the profile again (the same way)
// to a second file: at rate 1 the two must be identical, which checks the
// quiescence below. (At the default rate the second write itself may sample
// an allocation into a new bucket, so the check is only meaningful at rate 1.)
// -phase2 prints READY1 instead of READY, waits for SIGUSR1, runs phaseTwo
// (1000 retained 4096-byte objects), publishes again, and prints READY2.
// With -known, phase two allocates nothing at a new place instead: the round
// loop's one sized call site, which phase one used with another size, makes
// 1000 retained 4096-byte objects, so the buckets phase two adds (by size:
// Go 1.27 keys them by object size, earlier Go by size class) all have stacks
// the first profile had. A repeated capture may then reuse its tables.
//
// Quiescence is the hard part: with MemProfileRate=1 every allocation lands in
// a bucket, and every bucket is a sample (even an all-zero one). Writing the
// profile allocates; allocations made after the writer's internal snapshot
// would create buckets that a later capture sees but the oracle does not. So
// every write goes through one call site (same stacks, same buckets), is
// repeated until a write creates no new bucket, and its bytes are copied to a
// file opened beforehand. Nothing after that allocates.
package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
)

// rateFromArgs finds "-rate N" / "-rate=N" without the flag package, so the
// rate is set before main allocates anything.
func rateFromArgs() int {
	for i, arg := range os.Args {
		value := ""
		switch {
		case (arg == "-rate" || arg == "--rate") && i+1 < len(os.Args):
			value = os.Args[i+1]
		case len(arg) > 6 && arg[:6] == "-rate=":
			value = arg[6:]
		case len(arg) > 7 && arg[:7] == "--rate=":
			value = arg[7:]
		default:
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			os.Stderr.WriteString("oracle: bad -rate\n")
			os.Exit(2)
		}
		return n
	}
	return 0
}

// profBuf is reused by every write; it is grown up front so that writing the
// profile never allocates retained memory.
var profBuf bytes.Buffer

// emit is the single place that writes the heap profile.
//
//go:noinline
func emit() {
	profBuf.Reset()
	if err := pprof.Lookup("heap").WriteTo(&profBuf, 0); err != nil {
		panic(err)
	}
}

// bucketCount is the number of heap buckets (= samples in a heap profile).
// It does not allocate.
func bucketCount() int {
	n, _ := runtime.MemProfile(nil, true)
	return n
}

// writeStable writes the profile until a write creates no bucket, then copies
// that write to file (if any). The check is exact: if the count is the same
// before and after emit, emit's internal snapshot saw every bucket there is,
// and nothing after this point allocates. Retrying converges because every
// write goes through the same call of emit and so allocates from the same
// stacks; at rate 1 it takes ~30 writes, as each new bucket changes the
// encoded profile and with it where the encoder flushes and how far its
// buffers grow, i.e. the stacks and sizes it allocates.
func writeStable(file *os.File) {
	for tries := 0; ; tries++ {
		if tries == 1000 {
			panic("oracle: heap profile does not converge")
		}
		before := bucketCount()
		emit()
		if bucketCount() == before {
			break
		}
	}
	if file == nil {
		return
	}
	if _, err := file.Write(profBuf.Bytes()); err != nil {
		panic(err)
	}
}

// publish makes every allocation so far visible in the profile: the first GC
// publishes the allocations, the second the frees found by the first one's
// sweep. Then GC is switched off so nothing is published later.
func publish() {
	runtime.GC()
	runtime.GC()
	debug.SetGCPercent(-1)
}

// round is one "publish, write, announce" step.
type round struct {
	before func() // runs first (wait for a trigger, allocate more); may be nil
	sized  int    // then sizedObjects objects of this many bytes are retained, if not 0
	gc     bool   // publish before writing
	file   *os.File
	ready  []byte // printed when the profile is written
}

const (
	prSetPtracer    = 0x59616d61 // PR_SET_PTRACER, <linux/prctl.h>
	prSetPtracerAny = ^uintptr(0)
)

// Waiting must not allocate either: blocking on a channel can allocate a
// sudog, and Go timers can grow a per-P heap. So the target waits in
// nanosleep(2) and polls the (buffered) signal channel; the timespecs are
// package-level so that taking their address cannot allocate.
var (
	trigger = make(chan os.Signal, 1) // SIGUSR1
	pollTs  syscall.Timespec
	sleepTs syscall.Timespec
	idleTs  syscall.Timespec
)

// sleep sleeps for ts, continuing after signals (nanosleep is never
// restarted automatically); it overwrites ts with the remaining time.
func sleep(ts *syscall.Timespec) {
	for syscall.Nanosleep(ts, ts) == syscall.EINTR {
	}
}

// waitForTrigger returns once SIGUSR1 has arrived.
func waitForTrigger() {
	for len(trigger) == 0 {
		pollTs = syscall.Timespec{Nsec: 10e6}
		sleep(&pollTs)
	}
	<-trigger // ready, so this does not block
}

func mustCreate(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		os.Stderr.WriteString("oracle: " + err.Error() + "\n")
		os.Exit(1)
	}
	return f
}

func main() {
	if rate := rateFromArgs(); rate > 0 {
		runtime.MemProfileRate = rate
	}
	flag.Int("rate", 0, "runtime.MemProfileRate to set (0: keep the default 524288)")
	out := flag.String("out", "", "path of the oracle heap profile (required)")
	selfcheck := flag.String("selfcheck", "", "after READY, wait 2 s and write the profile again to this path")
	phase2 := flag.Bool("phase2", false, "after READY1, wait for SIGUSR1, run phaseTwo, publish, print READY2")
	known := flag.Bool("known", false, "with -phase2: phase two allocates only at a call site phase one used, with a new size")
	out2 := flag.String("out2", "", "with -phase2: path of the oracle profile written before READY2")
	flag.Parse()
	if *out == "" {
		os.Stderr.WriteString("oracle: -out is required\n")
		os.Exit(2)
	}

	// Let any process of this user read us even under Yama ptrace_scope=1:
	// goheap2pprof is a sibling of the target in the tests, not its parent.
	// (EINVAL without Yama; harmless.)
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetPtracer, prSetPtracerAny, 0)

	// Everything that allocates is set up before the allocation phase.
	pid := strconv.Itoa(os.Getpid())
	signal.Notify(trigger, syscall.SIGUSR1)
	profBuf.Grow(4 << 20)
	// Writing a profile initialises things once (crc32 tables, the profile
	// registry) and a GC sets up its workers; do both now so that phaseTwo is
	// the only retained difference between READY1 and READY2.
	if err := pprof.Lookup("heap").WriteTo(io.Discard, 0); err != nil {
		panic(err)
	}
	runtime.GC()
	rounds := []round{{gc: true, file: mustCreate(*out), ready: []byte("READY " + pid + "\n")}}
	if *selfcheck != "" {
		rounds = append(rounds, round{
			before: func() { sleepTs = syscall.Timespec{Sec: 2}; sleep(&sleepTs) },
			file:   mustCreate(*selfcheck),
			ready:  []byte("SELFCHECK " + pid + "\n"),
		})
	}
	if *phase2 {
		rounds[0].ready = []byte("READY1 " + pid + "\n")
		r := round{
			before: func() { waitForTrigger(); phaseTwo() },
			gc:     true,
			ready:  []byte("READY2 " + pid + "\n"),
		}
		if *known {
			rounds[0].sized = 48
			r.before = waitForTrigger
			r.sized = phaseTwoSize
		}
		if *out2 != "" {
			r.file = mustCreate(*out2)
		}
		rounds = append(rounds, r)
	}

	allocAll()

	// One call site for every write, so later writes reuse earlier buckets.
	for i := range rounds {
		r := &rounds[i]
		if r.before != nil {
			r.before()
		}
		if r.sized != 0 {
			allocSized(r.sized)
		}
		if r.gc {
			publish()
		}
		writeStable(r.file)
		os.Stdout.Write(r.ready)
	}
	for {
		idleTs = syscall.Timespec{Sec: 3600}
		sleep(&idleTs)
	}
}
