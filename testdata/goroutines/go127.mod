// The module of the go1.27.3+ build whose defaults are Go 1.27's (GODEBUG
// tracebacklabels=1): tests/go_programs.sh builds it with -modfile.
module goheap2pprof.test/goroutines

go 1.27
