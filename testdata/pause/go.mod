module goheap2pprof.test/pause

go 1.18
