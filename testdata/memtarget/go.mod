module memtarget

go 1.18
