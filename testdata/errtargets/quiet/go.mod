module goheap2pprof/testdata/errtargets/quiet

go 1.19
