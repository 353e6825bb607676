module example.com/heapvars

go 1.18
