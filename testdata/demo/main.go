// Command demo is a pretend web service with a memory leak, for the README's
// goheap2pprof walkthrough. It serves no pprof endpoint: the point is that
// goheap2pprof can still get its heap profile from outside.
//
//	go build -o demo . && ./demo &        # prints "READY <pid>"
//	goheap2pprof <pid> -o heap.pb.gz
//	go tool pprof -top heap.pb.gz         # sessionCache.remember and renderPage lead
//
// Every fake request renders a page and remembers the session in a cache that
// is never pruned (the leak); rendering also leaves some garbage behind.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// warmupRequests are served before the demo says READY.
const warmupRequests = 1000

// session is what the cache keeps per request -- forever.
type session struct {
	user    string
	page    []byte
	preview []byte
	history []string
}

// sessionCache is the leak: entries are added and never evicted.
type sessionCache struct {
	entries map[int]*session
}

func (c *sessionCache) remember(id int, user string, page []byte) {
	s := &session{user: user, page: page, preview: make([]byte, 8<<10)}
	copy(s.preview, page)
	for i := 0; i < 8; i++ {
		s.history = append(s.history, fmt.Sprintf("/%s/item/%d", user, i))
	}
	c.entries[id] = s
}

// renderPage builds a 16 KiB page; the builder's intermediate buffers are
// garbage, the final page is kept by the cache.
func renderPage(user string, id int) []byte {
	var b strings.Builder
	for b.Len() < 16<<10 {
		fmt.Fprintf(&b, "<p>hello %s, this is request %d</p>\n", user, id)
	}
	return []byte(b.String())
}

func handleRequest(cache *sessionCache, id int) {
	user := fmt.Sprintf("user%d", id%50)
	page := renderPage(user, id)
	cache.remember(id, user, page)
}

func main() {
	// Heap profiling is compiled out of programs that cannot read the
	// profile (the linker sets runtime.disableMemoryProfiling). Real services
	// usually import net/http/pprof; this one only has to refer to the heap
	// profile once to keep profiling on.
	if pprof.Lookup("heap") == nil {
		panic("no heap profile")
	}

	// Warm up as a service that has run for a while would have. The heap
	// profile is sampled (one sample per 512 KiB allocated on average), so
	// 1000 requests leave about 24 MiB in the cache: some 50 samples, enough
	// that both leaking sites show up in every run, not only in most. The
	// runtime publishes a cycle's allocations only when a collection ends;
	// one runtime.GC here makes the first profile already show them all.
	cache := &sessionCache{entries: make(map[int]*session)}
	for id := 0; id < warmupRequests; id++ {
		handleRequest(cache, id)
	}
	runtime.GC()
	fmt.Printf("READY %d\n", os.Getpid())

	// Keep serving (and leaking) slowly until killed.
	for id := warmupRequests; ; id++ {
		time.Sleep(100 * time.Millisecond)
		handleRequest(cache, id)
	}
}
