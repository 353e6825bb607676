module goheap2pprof.test/oomcrash

go 1.18
