module example.com/frames

go 1.18
