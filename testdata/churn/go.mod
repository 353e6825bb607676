module goheap2pprof.test/churn

go 1.19
