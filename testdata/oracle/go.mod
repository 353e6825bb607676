module goheap2pprof.test/oracle

go 1.18
