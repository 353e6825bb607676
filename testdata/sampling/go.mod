module goheap2pprof.test/sampling

go 1.18
