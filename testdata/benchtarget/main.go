// Command benchtarget is the benchmark target of goheap2pprof (bench/bench.sh):
// a process with a chosen number of distinct heap-profile buckets that serves
// net/http/pprof, so that goheap2pprof's capture can be compared with the
// process serving its own /debug/pprof/heap.
//
//	benchtarget -buckets 100000 [-port 0]
//	GODEBUG=profstackdepth=1024 benchtarget -buckets 10000 -deep 1000
//	benchtarget -buckets 250000 -sizes 1 -short   (after gensites, below)
//
// A heap bucket is keyed by its stack and its allocation size, and the size
// the runtime records is the object's size class. So the program allocates
// one object for each (call path, size class) pair: the call paths are the
// leaves of a binary tree of two non-inlined functions f0/f1, chosen at each
// level by one bit of the path number, and the sizes are the first size
// classes from 16 bytes up (the tiny allocator below 16 bytes would merge
// them). -deep D first recurses D frames, so that every stack is about D
// frames deep (Go >= 1.23 keeps up to GODEBUG=profstackdepth frames, max 1024).
// -short allocates instead at generated call sites, each called straight from
// main: stacks of four frames (site, short, main.main, runtime.main) plus
// runtime.goexit. The sites are written at build time by
// `go run ./gensites -sites S -o sites_gen.go` (S >= buckets / sizes); without
// them -short refuses.
//
// The objects are retained, so every bucket has in-use bytes. Then two GCs
// publish the profile, and the program prints
//
//	READY <pid> <port> <buckets> <bucket-bytes>
//
// where <buckets> is the runtime's own count (runtime.MemProfile) of heap
// buckets -- the requested ones plus those of the runtime, net/http and this
// program's own setup -- and <bucket-bytes> the memory they occupy: the
// runtime's profiling-bucket memory (MemStats.BuckHashSys) minus its fixed
// hash table. GET /bucketmem answers the same two numbers at any later time.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
)

// sizes are size classes of Go's allocator from 16 bytes up; each is a
// distinct class in every Go release since 1.5.
var sizes = []int{16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
	256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024}

// buckHashTableBytes is the runtime's bucket hash table (buckHashSize
// pointers), allocated once and counted in BuckHashSys with the buckets.
const buckHashTableBytes = 179999 * 8

var (
	retained [][]byte // every allocated object, so in-use is non-zero
	nsizes   int      // sizes per call path
	depth    int      // tree levels
	paths    int      // call paths in use
	total    int      // objects to allocate

	// The -short shape's call sites, set by the generated sites_gen.go:
	// shortFuncs[i](site, n) allocates n bytes at its own site'th site.
	shortFuncs   []func(site, n int)
	shortPerFunc int
)

// retain keeps b, so that its bucket has in-use bytes. Not inlined: each
// generated site is then two calls, which keeps the generated code small.
//
//go:noinline
func retain(b []byte) { retained = append(retained, b) }

// short allocates each (site, size class) pair once, at generated sites.
//
//go:noinline
func short() {
	for i := 0; i < total; i++ {
		site := i / nsizes
		shortFuncs[site/shortPerFunc](site%shortPerFunc, sizes[i%nsizes])
	}
}

// f0 and f1 are the two tree nodes: each level of the recursion calls one of
// them depending on bit `level` of path, so every path has its own stack.
//
//go:noinline
func f0(level, path int) {
	if level == depth {
		leaf(path)
	} else if path>>level&1 == 0 {
		f0(level+1, path)
	} else {
		f1(level+1, path)
	}
}

//go:noinline
func f1(level, path int) {
	if level == depth {
		leaf(path)
	} else if path>>level&1 == 0 {
		f0(level+1, path)
	} else {
		f1(level+1, path)
	}
}

// leaf allocates one object of each size for its path: one call site, one
// bucket per size class.
//
//go:noinline
func leaf(path int) {
	for s := 0; s < nsizes; s++ {
		if path*nsizes+s >= total {
			return
		}
		retained = append(retained, make([]byte, sizes[s]))
	}
}

// down recurses n frames before building the tree (the -deep variant).
//
//go:noinline
func down(n int) {
	if n > 0 {
		down(n - 1)
		return
	}
	for p := 0; p < paths; p++ {
		f0(0, p)
	}
}

// counts reports the runtime's heap-bucket count and their memory.
func counts() (buckets int, bytes uint64) {
	n, _ := runtime.MemProfile(nil, true)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.BuckHashSys > buckHashTableBytes {
		bytes = ms.BuckHashSys - buckHashTableBytes
	}
	return n, bytes
}

func main() {
	runtime.MemProfileRate = 1
	nbuckets := flag.Int("buckets", 1000, "distinct heap buckets to create")
	perPath := flag.Int("sizes", 16, "size classes per call path (1.."+fmt.Sprint(len(sizes))+")")
	deep := flag.Int("deep", 0, "recurse this many frames before allocating (stacks ~this deep)")
	shortShape := flag.Bool("short", false, "allocate at generated call sites (stacks 4 frames deep)")
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 for net/http/pprof (0: any free port)")
	flag.Parse()
	if *perPath < 1 || *perPath > len(sizes) || *nbuckets < 1 || *deep < 0 {
		fmt.Fprintln(os.Stderr, "benchtarget: bad -buckets, -sizes or -deep")
		os.Exit(2)
	}

	nsizes, total = *perPath, *nbuckets
	paths = (total + nsizes - 1) / nsizes
	for 1<<depth < paths {
		depth++
	}
	retained = make([][]byte, 0, total)
	if *shortShape {
		if shortPerFunc*len(shortFuncs) < paths {
			fmt.Fprintf(os.Stderr, "benchtarget: -short needs %d generated sites, has %d (go run ./gensites -sites %d)\n",
				paths, shortPerFunc*len(shortFuncs), paths)
			os.Exit(2)
		}
		short()
	} else {
		down(*deep)
	}

	// Publish the profile: after two GCs every bucket's counts are in
	// memRecord.active, as in a long-running service.
	runtime.GC()
	runtime.GC()

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtarget:", err)
		os.Exit(1)
	}
	http.HandleFunc("/bucketmem", func(w http.ResponseWriter, r *http.Request) {
		b, bytes := counts()
		fmt.Fprintf(w, "%d %d\n", b, bytes)
	})
	b, bytes := counts()
	fmt.Printf("READY %d %d %d %d\n", os.Getpid(), ln.Addr().(*net.TCPAddr).Port, b, bytes)
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, "benchtarget:", err)
		os.Exit(1)
	}
}
