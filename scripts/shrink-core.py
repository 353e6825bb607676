#!/usr/bin/env python3
# Shrinks a real core into a small fuzz seed: scripts/shrink-core.py CORE OUT
# (testdata/fuzz/core/go126-pie-kernel-headers came from a kernel core of
# testdata/oracle built as PIE with Go 1.26.8).
# Keeps a core's ELF header, program headers and notes; every PT_LOAD keeps
# its address range but loses its bytes (p_filesz 0), except the first page
# of segments whose first page is an ELF header.
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
data = open(src, 'rb').read()
phoff, = struct.unpack_from('<Q', data, 32)
phnum, = struct.unpack_from('<H', data, 56)
out = bytearray()
notes_end = 0
for i in range(phnum):
    t, f, off, va, pa, fs, ms, al = struct.unpack_from('<IIQQQQQQ', data, phoff + i*56)
    if t == 4: notes_end = max(notes_end, off + fs)
out = bytearray(data[:notes_end])
for i in range(phnum):
    o = phoff + i*56
    t, f, off, va, pa, fs, ms, al = struct.unpack_from('<IIQQQQQQ', data, o)
    if t != 1: continue
    keep = 4096 if fs >= 4096 and data[off:off+4] == b'\x7fELF' else 0
    newoff = len(out)
    out += data[off:off+keep]
    struct.pack_into('<IIQQQQQQ', out, o, t, f, newoff if keep else notes_end, va, pa, keep, ms, al)
open(dst, 'wb').write(out)
