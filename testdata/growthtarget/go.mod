module goheap2pprof.test/growthtarget

go 1.19
