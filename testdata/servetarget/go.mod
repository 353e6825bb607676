module servetarget

go 1.18
