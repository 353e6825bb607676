module goheap2pprof.test/oomgrower

go 1.18
