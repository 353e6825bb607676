module goheap2pprof.test/demo

go 1.19
