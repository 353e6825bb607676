module goheap2pprof/testdata/errtargets/nopprof

go 1.19
