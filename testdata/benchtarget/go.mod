module goheap2pprof.test/benchtarget

go 1.19
