module damagedtarget

go 1.21
