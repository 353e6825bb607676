// The struct types and global variables an executable's DWARF describes,
// read with libdw and knowing nothing about Go: "struct type by name -> its
// size and its members' offsets and sizes". Compressed debug sections
// (SHF_COMPRESSED, as Go writes them by default, or .zdebug_*) are
// decompressed: zlib ones by us, the rest by libdw.
// Compilation units are indexed lazily, only as far as a lookup needs: first
// the units the caller names as likely (Go's "runtime" for the runtime's
// types and variables), then the others, each set in file order. A
// zlib-compressed .debug_info is inflated lazily too, a step at a time as
// the lookups reach further: Go's runtime units end 22-29% of the way into
// helm's and crictl's, 78-100% into a small program's.
//
//   std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf);  // nullopt: no DWARF
//   if (dwarf) {
//     std::optional<DwarfStruct> s = dwarf->FindStruct("runtime.bucket");
//     std::optional<DwarfStruct> v = dwarf->FindVariableStruct("runtime.mProfCycle");
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "elf/elf_file.h"

namespace goheap2pprof {

struct DwarfMember {
  std::string name;
  // DW_AT_data_member_location as a constant; nullopt when it is missing or
  // an expression (which no struct of interest uses).
  std::optional<uint64_t> offset;
  // Byte size of the member's type; nullopt when libdw cannot compute it.
  std::optional<uint64_t> size;
  // When the member's type is a struct (through typedefs): where its DIE is,
  // for DwarfTypes::MemberStruct (nested and anonymous structs).
  std::optional<uint64_t> struct_die = std::nullopt;
};

struct DwarfStruct {
  std::string name;  // the type's DW_AT_name; may be empty for an anonymous type
  uint64_t size = 0;
  std::vector<DwarfMember> members;  // in DWARF order
};

class DwarfTypes {
 public:
  // Reads the DWARF of `elf`, which must outlive the result. nullopt when the
  // file has no .debug_info (linked with -w or -s, or `strip`ped). Throws
  // kMalformed when the debug sections are present but cannot be
  // decompressed or libdw cannot read them; a malformed unit, or a
  // .debug_info stream damaged past the part inflated at the start, is
  // reported by the lookup that reaches it. Lookups search the units whose DW_AT_name is
  // in `preferred_units` before all others.
  static std::optional<DwarfTypes> Open(const ElfFile& elf,
                                        std::vector<std::string> preferred_units = {});

  DwarfTypes(DwarfTypes&&) noexcept;
  DwarfTypes& operator=(DwarfTypes&&) noexcept;
  ~DwarfTypes();

  // The struct type (DW_TAG_structure_type) named `name` at the top level of
  // a compilation unit; the first one if several units define it (preferred
  // units before the others, each in file order). nullopt if
  // none does, or it has no DW_AT_byte_size (a declaration). Not
  // thread-safe (it indexes more units as it needs them), nor is
  // FindVariableStruct.
  std::optional<DwarfStruct> FindStruct(std::string_view name) const;

  // The struct that the type of the global variable `name` (DW_TAG_variable
  // at the top level of a unit) resolves to through typedefs and qualifiers.
  // nullopt if there is no such variable or its type is not a struct.
  std::optional<DwarfStruct> FindVariableStruct(std::string_view name) const;

  // The struct type of a member (its struct_die); nullopt when it has none.
  std::optional<DwarfStruct> MemberStruct(const DwarfMember& member) const;

  // How much of .debug_info is inflated so far, and its whole size (both 0
  // when it was not compressed with zlib).
  std::pair<uint64_t, uint64_t> InflatedInfo() const;

 private:
  // The image libdw reads, libelf's and libdw's handles on it, and the part
  // of .debug_info inflated so far (see the .cc). Behind a pointer: const
  // lookups grow it, which reopens the handles.
  struct View;

  DwarfTypes();
  // Indexes the top-level entries of the next unit not yet indexed; false
  // when every unit is. Throws kMalformed for a bad unit.
  bool IndexNextUnit() const;
  // The DIE offset of `name` in `index`, indexing further units until it is
  // there or none are left.
  std::optional<uint64_t> Lookup(const std::unordered_map<std::string, uint64_t>& index,
                                 std::string_view name) const;
  // read() run until libdw found everything it followed, growing the
  // inflated part of .debug_info a step each time it did not (read()
  // notes that in missed_): what a lookup answers is what it would answer
  // with all of .debug_info there. (A unit is shown whole or not at all, so
  // what read() throws for, inside one unit, more units do not change.)
  template <typename Read>
  auto WithEnoughInfo(Read read) const -> decltype(read());
  std::optional<DwarfStruct> StructAt(uint64_t die_offset) const;
  std::optional<DwarfStruct> ReadStruct(uint64_t die_offset) const;
  std::optional<DwarfStruct> ReadVariableStruct(uint64_t die_offset) const;

  std::unique_ptr<View> view_;
  // Top-level DIE offsets by name (the first definition of each), of the
  // units indexed so far. Pass 0 indexes the preferred units, pass 1 the
  // others, each in file order up to the unit before next_unit_ (an offset
  // in .debug_info); pass 2: all are indexed.
  std::vector<std::string> preferred_units_;
  mutable int pass_ = 0;
  mutable uint64_t next_unit_ = 0;
  mutable uint64_t indexed_dies_ = 0;  // bounds the walk (see the .cc)
  mutable bool missed_ = false;        // see WithEnoughInfo
  mutable std::unordered_map<std::string, uint64_t> structs_;
  mutable std::unordered_map<std::string, uint64_t> variables_;
};

}  // namespace goheap2pprof
