// Static data references in machine code, decoded with Capstone: the
// absolute addresses a function's instructions load from, store to or take
// the address of. This is how runtime variables are recovered from stripped
// Go binaries: runtime.mbuckets is the one address that several runtime
// functions known to touch it all reference.
//
// Recognized forms:
//   amd64  any instruction with a RIP-relative memory operand (MOV, LEA,
//          CMP, LOCK XADD, ...): target = next instruction + displacement.
//   arm64  ADRP Xn, page directly followed by ADD Xm, Xn, #lo (address
//          taken) or a load/store [Xn, #lo] (access): what cmd/asm emits for
//          every MOVD sym(SB) / MOVD $sym(SB), and cmd/link for relocations.
//
//   std::vector<DataRef> refs = ScanDataRefs(EM_X86_64, code_bytes, entry);
//   for (const DataRef& r : refs) use(r.target, r.size, r.write);
#pragma once

#include <cstdint>
#include <vector>

#include "base/bytes.h"

namespace goheap2pprof {

struct DataRef {
  uint64_t insn_addr = 0;  // address of the (last) instruction forming the reference
  uint64_t target = 0;     // absolute link-time address referenced
  // Bytes accessed at target: 1, 2, 4, 8 (or 16 for pairs / vectors); 0 when
  // the address is only computed (LEA, ADRP+ADD).
  uint8_t size = 0;
  bool write = false;  // the access stores to target
};

// Decodes code (the bytes of one function, loaded at vaddr) for machine
// EM_X86_64 or EM_AARCH64 and returns its data references in instruction
// order. Undecodable bytes (padding, data in text) are skipped one quantum at
// a time; at most max_insns instructions are decoded. Throws kUnsupported for
// other machines and kInternal if Capstone cannot be initialized.
std::vector<DataRef> ScanDataRefs(uint16_t machine, Bytes code, uint64_t vaddr,
                                  size_t max_insns = 1 << 16);

}  // namespace goheap2pprof
