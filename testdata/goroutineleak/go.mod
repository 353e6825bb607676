module goheap2pprof.test/goroutineleak

go 1.18
