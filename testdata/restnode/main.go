// Command restnode plays the Go side of a node at rest for
// bench/agent_rest.sh (issue 27), in one small binary built once:
//
//	restnode idle   # a small idle Go service: a few hundred heap buckets
//	                # (sampled at rate 1), then waits for SIGTERM/SIGINT
//	restnode sink   # prints "LISTENING <host:port>", answers every HTTP
//	                # request 200 and discards its body: a push backend that
//	                # costs the soak neither disk nor parsing
//
// Idle keeps its heap small so that 200 of them fit a CI machine, yet
// gives each capture a real bucket list to walk and symbolize. Both exit by
// themselves after two hours, so that none outlives a killed bench by more.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// kept holds what idle allocated, so that its buckets stay in use.
var kept [][]byte

// Distinct call sites make distinct buckets: depth d recurses d times before
// allocating, so each (depth, size) pair is its own stack.
func allocAt(depth, size int) []byte {
	if depth == 0 {
		return make([]byte, size)
	}
	return allocAt(depth-1, size)
}

func idle() {
	runtime.MemProfileRate = 1
	for depth := 0; depth < 16; depth++ {
		for size := 1; size <= 16; size++ {
			kept = append(kept, allocAt(depth, size*16))
		}
	}
	runtime.GC() // publish the allocations to the profile
	runtime.GC()
	// Calling MemProfile also keeps heap profiling in: a program that never
	// reaches it is linked with runtime.disableMemoryProfiling set, and its
	// profile would be empty.
	records, _ := runtime.MemProfile(nil, true)
	fmt.Println("READY", records)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

func sink() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("LISTENING", l.Addr())
	err = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	go func() {
		time.Sleep(2 * time.Hour)
		os.Exit(0)
	}()
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: restnode idle|sink")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "idle":
		idle()
	case "sink":
		sink()
	default:
		fmt.Fprintln(os.Stderr, "usage: restnode idle|sink")
		os.Exit(2)
	}
}
