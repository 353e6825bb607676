module goheap2pprof.test/restnode

go 1.18
