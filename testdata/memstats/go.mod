module goheap2pprof.test/memstats

go 1.18
