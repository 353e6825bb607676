// The Capstone functions the code scan (gobin/code_scan.h) calls, as one
// table. A dynamic build loads libcapstone.so.4 when the first stripped
// binary needs its code read (dlopen), not when the process starts:
// relocating Capstone's tables cost every start of a dynamic goheap2pprof
// 1.6-2.5 ms (bench/README.md), and a binary with a symbol table never uses
// it. A static build links Capstone in, and the table points at it.
//
//   const CapstoneLibrary& cs = Capstone();  // throws if Capstone cannot be loaded
//   csh handle;
//   cs.open(CS_ARCH_X86, CS_MODE_64, &handle);
#pragma once

#include <capstone/capstone.h>

#include <string>

#include "base/expected.h"

namespace goheap2pprof {

struct CapstoneLibrary {
  cs_err (*open)(cs_arch arch, cs_mode mode, csh* handle);
  cs_err (*option)(csh handle, cs_opt_type type, size_t value);
  cs_err (*close)(csh* handle);
  const char* (*strerror)(cs_err code);
  cs_insn* (*malloc)(csh handle);
  void (*free)(cs_insn* insn, size_t count);
  bool (*disasm_iter)(csh handle, const uint8_t** code, size_t* size, uint64_t* address,
                      cs_insn* insn);
  const char* (*reg_name)(csh handle, unsigned int reg_id);
  unsigned int (*version)(int* major, int* minor);
};

// The process's Capstone, loaded on the first call (thread-safe). Throws
// Error(kUnsupported) naming the library and why when it cannot be loaded,
// on every call.
const CapstoneLibrary& Capstone();

// The same, or nullptr with *why set to the Error's text: for --version,
// which says that Capstone is missing rather than fail.
const CapstoneLibrary* TryCapstone(std::string* why);

#ifdef GOHEAP2PPROF_CAPSTONE_DLOPEN
// Loads the Capstone called `soname` and resolves the table's functions;
// Error(kUnsupported) when the library cannot be loaded or lacks one of
// them. What Capstone() does once with "libcapstone.so.4" (Capstone 4's ABI,
// which the code scan's structures are compiled against).
Expected<CapstoneLibrary> TryLoadCapstoneLibrary(const char* soname);
#endif

}  // namespace goheap2pprof
