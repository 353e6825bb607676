// Recovering a runtime variable's link-time address from the machine code of
// the runtime functions that use it, for binaries without .symtab: the one
// address that every one of several functions references, in the data
// section the variable's declaration puts it in. Shared by the heap
// profiler's variables (runtime_variables.cc) and the memory statistics'
// (memstats_variables.cc).
//
//   RuntimeCode code(bin);
//   RuntimeVariable v = RecoverVariable(bin, code, "runtime.allglen",
//       {{{"runtime.allgadd"}}, {{"runtime.forEachGRace"}}}, 0,
//       [&](uint64_t a) { return CheckSection(md, DataSection::kNoptrbss, a); });
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "gobin/code_scan.h"
#include "gobin/go_binary.h"
#include "gobin/moduledata.h"
#include "gobin/runtime_variables.h"

namespace goheap2pprof {

// Code of the runtime functions a recovery reads, decoded once.
class RuntimeCode {
 public:
  explicit RuntimeCode(const GoBinary& bin) : bin_(bin) {}

  // Refs of the first of `names` that is in the pclntab; *which* names it.
  // nullptr when none is.
  const std::vector<DataRef>* Refs(std::initializer_list<std::string_view> names,
                                   std::string* which = nullptr);
  // Whether the function `name` references `target` (with an access of
  // `size` bytes, when given); false when the function is absent.
  bool References(std::string_view name, uint64_t target, std::optional<uint8_t> size = {});

 private:
  const GoBinary& bin_;
  std::map<std::string, std::optional<std::vector<DataRef>>, std::less<>> cache_;
};

// One function that references the variable: the first present name of
// `names`; a group that is not required may be absent from the binary.
struct CodeEvidence {
  std::initializer_list<std::string_view> names;
  bool required = true;
  std::optional<uint8_t> size;  // only references with this access size (0: address taken)
};

// The kUnsupported error of a variable that the code does not give
// unambiguously.
Error Unrecoverable(const GoBinary& bin, std::string_view variable, std::string why);

// Intersects the referenced addresses of every group, subtracts
// field_offset (the variable's field the functions reference: the address
// they share is variable + field_offset), and keeps the candidates for which
// check returns "" (else why not). Exactly one must remain, or it throws
// Unrecoverable listing the candidates and why each was rejected; source then
// says "recovered from <the functions used>".
RuntimeVariable RecoverVariable(const GoBinary& bin, RuntimeCode& code, std::string_view variable,
                                std::initializer_list<CodeEvidence> groups, uint64_t field_offset,
                                const std::function<std::string(uint64_t)>& check);

// "" if a is in the section, else why not.
std::string CheckSection(const ModuleData& md, DataSection section, uint64_t a);

// "" if a is in the section and aligned to `align` bytes, else why not.
std::string CheckPlacement(const ModuleData& md, DataSection section, uint64_t align, uint64_t a);

// The symbol table's address of `name`, or kUnsupported saying that
// `what` ("memory statistics", "goroutines") cannot be located.
RuntimeVariable SymbolOrRefuse(const GoBinary& bin, std::string_view name, std::string_view what);

// runtime.firstmoduledata of a stripped binary, or Unrecoverable naming
// `variable`.
const ModuleData& ModuleDataOrRefuse(const GoBinary& bin, const PclntabLocation& loc,
                                     std::string_view variable);

}  // namespace goheap2pprof
