module example.com/fuzzseed

go 1.18
