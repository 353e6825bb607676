// The goroutine oracle (tests/e2e/goroutines_test.sh): parks goroutines in
// known ways, writes its own goroutine profile at debug=0, 1 and 2 into the
// directory given as the first argument, then holds still for goheap2pprof
// to read the same goroutines from outside.
//
//	goroutines <dir> [n [churn|minutes|record|bench]]   # n goroutines from one site (default 10000)
//
// With "churn", once the files are written, two spawners create goroutines
// that sleep 10 ms and exit, up to 50,000 a second in all, so that a
// capture from outside meets goroutines that start, park and die under it.
//
// With "minutes", once ready, it runs the GC twice (the second stamps each
// waiting goroutine's waitsince with the first's time), sleeps 65 s and
// writes debug=2 again into goroutine2m.txt, then <dir>/ready2: its headers
// then say "1 minutes".
//
// With "record" (record.go), goroutines created and ending fast record
// their own stacks before they park, for the torn-stack check. With
// "bench" (bench.go), the n goroutines park under 30 frames and the target
// times its own debug=1 and debug=2 before it says ready.
//
// <dir>/ready appears once the three files are complete. The main goroutine
// writes them and then parks in select{}: it is the one goroutine whose
// stack differs between the files and a later capture.
package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
)

var (
	never     = make(chan int)
	neverSend = make(chan int)
	mu        sync.Mutex
	cond      = sync.NewCond(&sync.Mutex{})
	wg        sync.WaitGroup
)

func recvForever() { <-never }
func sendForever() { neverSend <- 1 }
func selectForever() {
	select {
	case <-never:
	case neverSend <- 2:
	}
}
func lockForever()  { mu.Lock() }
func waitForever()  { wg.Wait() }
func sleepForever() { time.Sleep(24 * time.Hour) }

// inSyscall blocks in read(2) on a pipe nobody writes (a blocking fd, not
// the netpoller's): the goroutine stays in _Gsyscall, and its stack is the
// one its entersyscall saved (syscallsp, syscallpc).
func inSyscall(fd int) {
	buf := make([]byte, 1)
	syscall.Read(fd, buf)
}
func condForever() {
	cond.L.Lock()
	for {
		cond.Wait()
	}
}

// inlinedHelper is small enough to be inlined into viaInline: the profile
// then has a location with two lines.
func inlinedHelper(c chan int) int { return <-c + 1 }

func viaInline(c chan int) {
	v := inlinedHelper(c)
	println(v)
}

// deep parks under n frames of its own.
//
//go:noinline
func deep(n int) int {
	if n == 0 {
		<-never
		return 0
	}
	return deep(n-1) + 1
}

func fromOneSite() { <-never }

func accept(ln net.Listener) {
	c, err := ln.Accept()
	if err == nil {
		c.Close()
	}
}

func churnOne() { time.Sleep(10 * time.Millisecond) }

func spawn() {
	for {
		for i := 0; i < 250; i++ {
			go churnOne()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func write(dir, name string, debug int) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("goroutine").WriteTo(f, debug); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
}

func main() {
	dir := os.Args[1]
	n := 10000
	if len(os.Args) > 2 {
		n, _ = strconv.Atoi(os.Args[2])
	}
	mode := ""
	if len(os.Args) > 3 {
		mode = os.Args[3]
	}
	mu.Lock()
	wg.Add(1)
	go recvForever()
	go sendForever()
	go selectForever()
	go lockForever()
	go waitForever()
	go sleepForever()
	go condForever()
	go viaInline(make(chan int))
	go deep(10)
	// Past every frame limit: the profile's depth (32 before Go 1.23, 128
	// from it) and the dump's (100 frames before 1.21, 50+50 from it).
	go deep(130)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go accept(ln)
	var pipe [2]int
	if err := syscall.Pipe(pipe[:]); err != nil {
		panic(err)
	}
	go inSyscall(pipe[0])
	// Labels, one of them with characters the dump's header must quote
	// (GODEBUG tracebacklabels=1, Go 1.26+).
	pprof.Do(context.Background(), pprof.Labels("job", "reindex", "shard", "7", "owner", `core "infra"`),
		func(context.Context) {
			for i := 0; i < 3; i++ {
				go recvForever()
			}
		})
	for i := 0; i < n; i++ {
		if mode == "bench" {
			go deep30()
		} else {
			go fromOneSite()
		}
	}
	// Long enough for every goroutine to reach its park.
	time.Sleep(time.Second)
	if mode != "bench" { // which times its own writes instead
		write(dir, "goroutine.pb.gz", 0)
		write(dir, "goroutine.txt", 1)
		write(dir, "goroutine2.txt", 2)
	}
	switch mode {
	case "churn":
		go spawn()
		go spawn()
		time.Sleep(100 * time.Millisecond)
	case "record":
		startRecording(dir)
		time.Sleep(100 * time.Millisecond)
	case "bench":
		timeOwnWrites(dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		panic(err)
	}
	if mode == "minutes" {
		runtime.GC()
		runtime.GC()
		time.Sleep(65 * time.Second)
		write(dir, "goroutine2m.txt", 2)
		if err := os.WriteFile(filepath.Join(dir, "ready2"), nil, 0o644); err != nil {
			panic(err)
		}
	}
	select {}
}
