module goheap2pprof.test/goroutines

go 1.18
