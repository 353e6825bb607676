// Command servetarget is the test target of `goheap2pprof serve`: a Go
// program that serves its own net/http/pprof on loopback, so that what
// serve answers for its pid can be compared with what the program itself
// answers.
//
//	servetarget [-rate N] [-retain N]   # prints "READY <pid> <port>", serves until killed
//	servetarget -retain 0 -http=false   # a small idle Go process (load tests): "READY <pid> 0"
//	servetarget -gc-on                  # leave the collector on after setup (debug=1's MemStats
//	                                    # block: with it off, NextGC moves with every allocation)
//	servetarget -otel-ctx "service.name=a,service.instance.id=b"   # publish an OTEP 4719 context
//	kill -USR1 <pid>                    # phase 2: retain 1000 more 4096-byte objects, publish, "PHASE2 <pid>"
//	servetarget -exec-on-usr2 PATH      # kill -USR2 <pid>: execute PATH in place (same pid and
//	                                    # start time, another program image) as "PATH -retain 2 -http=false"
//	servetarget -euid-on-usr2 UID       # kill -USR2 <pid>: set the effective uid to UID (the same
//	                                    # process, another owner; needs the right to), print "EUID <pid> UID"
//
// After setup the heap profile is published (two GCs) and the collector is
// turned off, so the profile changes only when phase 2 runs its own GC.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
)

var retained [][]byte

//go:noinline
func allocSmall(n int) {
	for i := 0; i < n; i++ {
		retained = append(retained, make([]byte, 64))
	}
}

//go:noinline
func allocLarge(n int) {
	for i := 0; i < n; i++ {
		retained = append(retained, make([]byte, 1<<16))
	}
}

//go:noinline
func allocMany(depth, n int) {
	if depth > 0 {
		allocMany(depth-1, n)
		return
	}
	for i := 0; i < n; i++ {
		retained = append(retained, make([]byte, 512))
	}
}

//go:noinline
func phaseTwo() {
	for i := 0; i < 1000; i++ {
		retained = append(retained, make([]byte, 4096))
	}
}

var gcOn = flag.Bool("gc-on", false, "leave the collector on after setup")

func publish() {
	runtime.GC()
	runtime.GC()
	if !*gcOn {
		debug.SetGCPercent(-1)
	}
}

func main() {
	rate := flag.Int("rate", 0, "runtime.MemProfileRate (0: the default)")
	retain := flag.Int("retain", 1, "scale of the retained allocations")
	serve := flag.Bool("http", true, "serve net/http/pprof on a loopback port")
	execPath := flag.String("exec-on-usr2", "", "on SIGUSR2, execute this program in place")
	euid := flag.Int("euid-on-usr2", -1, "on SIGUSR2, set the effective uid to this")
	flag.Parse()
	if *rate > 0 {
		runtime.MemProfileRate = *rate
	}
	if *otelCtx != "" {
		if err := publishOtelContext(*otelCtx); err != nil {
			fmt.Fprintln(os.Stderr, "otel-ctx:", err)
			os.Exit(1)
		}
	}
	allocSmall(20000 * *retain)
	allocLarge(100 * *retain)
	for d := 0; d < 8; d++ {
		allocMany(d, 2000**retain)
	}
	port := 0
	if *serve {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go http.Serve(ln, nil)
		port = ln.Addr().(*net.TCPAddr).Port
	}
	publish()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	if *execPath != "" {
		usr2 := make(chan os.Signal, 1)
		signal.Notify(usr2, syscall.SIGUSR2)
		go func() {
			<-usr2
			argv := []string{*execPath, "-retain", "2", "-http=false"}
			err := syscall.Exec(*execPath, argv, os.Environ())
			fmt.Fprintln(os.Stderr, "exec:", err)
			os.Exit(1)
		}()
	}
	if *euid >= 0 {
		usr2 := make(chan os.Signal, 1)
		signal.Notify(usr2, syscall.SIGUSR2)
		go func() {
			<-usr2
			// Every thread: Go's syscall.Setresuid applies to all of them.
			if err := syscall.Setresuid(-1, *euid, -1); err != nil {
				fmt.Fprintln(os.Stderr, "setresuid:", err)
				os.Exit(1)
			}
			fmt.Printf("EUID %d %d\n", os.Getpid(), *euid)
		}()
	}
	fmt.Printf("READY %d %d\n", os.Getpid(), port)
	for range usr1 {
		debug.SetGCPercent(100)
		phaseTwo()
		publish()
		fmt.Printf("PHASE2 %d\n", os.Getpid())
	}
}
