// Decoder for the Go pclntab (runtime.pcHeader and the tables behind it), the
// function/file/line table every Go binary keeps, stripped or not. Supports
// the 1.18-1.19 (magic 0xfffffff0) and 1.20+ (0xfffffff1) layouts, including
// the 1.26 changes (textStart always 0, funcdata inside the pclntab).
// Decoding is lazy: nothing is walked at construction beyond the header.
//
//   Pclntab tab(table_bytes, text_start, gofunc_bytes);
//   if (auto f = tab.FindFunc(pc)) {
//     Frame fr = tab.FrameAt(*f, pc - 1);  // innermost (inlined) function at pc-1
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "base/bytes.h"
#include "base/error.h"
#include "base/expected.h"

namespace goheap2pprof {

enum class PclntabFormat { kGo118, kGo120 };

// pcHeader.magic values (internal/abi/symtab.go) and the header's size.
inline constexpr uint32_t kPclntabMagicGo118 = 0xfffffff0;  // Go 1.18-1.19
inline constexpr uint32_t kPclntabMagicGo120 = 0xfffffff1;  // Go 1.20+
inline constexpr uint64_t kPcHeaderSize = 72;

// A function found in the functab.
struct FuncRef {
  uint32_t index = 0;     // functab index
  uint64_t entry = 0;     // runtime address of the function's first instruction
  uint64_t func_off = 0;  // offset of its _func inside the pclntab
};

// One source-level frame at a PC: the innermost function at that PC, which is
// an inlined function when the PC is inside inlined code.
struct PcFrame {
  std::string_view function;  // raw symbol name (generic shapes included)
  std::string_view file;      // "?" when the file is unknown
  int64_t line = 0;
  int64_t start_line = 0;  // 0 before Go 1.20
  uint8_t func_id = 0;     // FuncID of that function (inlined or not)
  bool inlined = false;    // true when the frame is an inlined call
  uint64_t entry = 0;      // entry of the physical (outermost) function
};

// The go:func.* region, read as it is asked for: a capture reads a few
// inline trees scattered over it, and before Go 1.26 it starts among the
// read-only data, megabytes before the end of its segment (4.8 MB in the
// bench's Go 1.19.8 binary, 2.5 MB of them outside the pclntab). `read` is
// asked only for ranges within size (Pclntab checks), and gives nullopt when
// the bytes cannot be had.
struct GoFuncBytes {
  uint64_t size = 0;
  std::function<std::optional<Bytes>(uint64_t off, uint64_t len)> read;
  // Bytes at hand (tests, fuzzers, a pclntab in memory).
  static GoFuncBytes Of(Bytes bytes);
};

class Pclntab {
 public:
  // table: the bytes of the pclntab, starting at pcHeader.
  // text_start: runtime address of runtime.text (moduledata.text); entry
  //   offsets in the functab are relative to it.
  // gofunc: bytes from the go:func.* symbol (moduledata.gofunc) to the end of
  //   its containing section/segment; funcdata offsets (inline trees) are
  //   relative to its start. Since 1.26 it lies inside the pclntab itself.
  // Throws Error(kMalformed / kUnsupported) if the header is not a pclntab we know.
  Pclntab(Bytes table, uint64_t text_start, Bytes gofunc);
  // The same with that Error as a value (a probe of a stripped binary).
  static Expected<Pclntab> TryParse(Bytes table, uint64_t text_start, Bytes gofunc);
  static Expected<Pclntab> TryParse(Bytes table, uint64_t text_start, GoFuncBytes gofunc);

  PclntabFormat format() const { return format_; }
  uint32_t magic() const { return magic_; }
  uint8_t min_lc() const { return min_lc_; }  // PC quantum: 1 amd64, 4 arm64
  uint64_t nfunc() const { return nfunc_; }
  uint64_t text_start() const { return text_start_; }
  // Stored pcHeader.textStart (0 in 1.26+; link-time value before).
  uint64_t header_text_start() const { return header_text_start_; }
  // [text_start, text_start + text size) covered by the functab.
  uint64_t text_end() const;

  // The function containing pc, or nullopt if pc is outside every function.
  std::optional<FuncRef> FindFunc(uint64_t pc) const;
  // Name of the physical function.
  std::string_view FuncName(const FuncRef& f) const;
  Expected<std::string_view> TryFuncName(const FuncRef& f) const;
  uint8_t FuncId(const FuncRef& f) const;
  // The innermost frame at pc, which must be inside f. Throws kMalformed on
  // corrupt tables; TryFrameAt returns that Error (the symbolizer counts it
  // as a failed lookup, as the runtime would find no *Func).
  PcFrame FrameAt(const FuncRef& f, uint64_t pc) const;
  Expected<PcFrame> TryFrameAt(const FuncRef& f, uint64_t pc) const;
  // TryFrameAt's function alone (FuncForPC(pc).Name()): the inline table and
  // the name, without the file and line tables a name does not need.
  Expected<std::string_view> TryFunctionAt(const FuncRef& f, uint64_t pc) const;
  // The caller of the inlined frame at pc: the pc inside the same physical
  // function at which the next outer frame is evaluated (entry + parentPc), or
  // nullopt when the frame at pc is not inlined.
  std::optional<uint64_t> InlineParentPc(const FuncRef& f, uint64_t pc) const;
  Expected<std::optional<uint64_t>> TryInlineParentPc(const FuncRef& f, uint64_t pc) const;
  // The goroutine unwinder's two facts about a function (runtime.funcInfo):
  // the SP delta at pc (pcvalue of _func.pcsp: the frame's size there, the
  // return address excluded) and _func.flag (FuncFlagTopFrame 1,
  // FuncFlagSPWrite 2, FuncFlagAsm 4).
  Expected<int32_t> TrySpDelta(const FuncRef& f, uint64_t pc) const;
  Expected<uint8_t> TryFuncFlag(const FuncRef& f) const;
  // Functab entry i (for enumerating functions in tests and recovery).
  FuncRef FuncAt(uint32_t index) const;

  // pcvalue table evaluation (exposed for tests). Returns -1 when off == 0 or
  // pc is not covered.
  int32_t PcValue(const FuncRef& f, uint32_t table_off, uint64_t pc) const;

 private:
  // The fixed part of a _func, decoded from the pclntab.
  struct FuncHeader {
    uint64_t off = 0;  // of the _func inside the pclntab
    uint32_t entry_off = 0;
    int32_t name_off = 0;
    uint32_t pcfile = 0;
    uint32_t pcln = 0;
    uint32_t npcdata = 0;
    uint32_t cu_offset = 0;
    int32_t start_line = 0;  // 0 before 1.20
    uint8_t func_id = 0;
    uint8_t nfuncdata = 0;
    uint64_t pcdata_off = 0;  // of pcdata[0] inside the pclntab
  };
  // One inlinedCall entry, normalized across layouts.
  struct InlinedCall {
    uint8_t func_id = 0;
    int32_t name_off = 0;
    int32_t parent_pc = 0;
    int32_t start_line = 0;  // 0 in the 1.18/1.19 layout
  };

  Pclntab() = default;
  // Checks and decodes the pcHeader; the Error if it is not one we read.
  std::optional<Error> ParseHeader();
  // Sets magic_ and format_; the Error of a magic we do not read (called
  // once the header is known to be in the table).
  std::optional<Error> ParseMagic();
  Expected<FuncHeader> ReadFunc(const FuncRef& f) const;
  uint32_t PcData(const FuncHeader& h, uint32_t index) const;  // 0 = no table
  // Offset of funcdata[index] from gofunc, or nullopt if absent.
  std::optional<uint32_t> FuncData(const FuncHeader& h, uint32_t index) const;
  Expected<int32_t> PcValueAt(uint64_t entry, uint32_t table_off, uint64_t pc) const;
  // The inlinedCall at pc, or nullopt when pc is not inside inlined code.
  Expected<std::optional<InlinedCall>> InlinedCallAt(const FuncRef& f, const FuncHeader& h,
                                                     uint64_t pc) const;
  // [off, off + len) of the go:func.* region, read if need be.
  Expected<ByteView> GoFuncAt(uint64_t off, uint64_t len, std::string_view what) const;
  Expected<std::string_view> NameAt(int32_t name_off) const;
  Expected<std::string_view> FileAt(const FuncHeader& h, int32_t fileno) const;
  uint32_t FtabEntryOff(uint64_t index) const;

  ByteView table_;
  GoFuncBytes gofunc_;
  ByteView funcnametab_;
  ByteView cutab_;
  ByteView filetab_;
  ByteView pctab_;
  ByteView functab_;  // pclntable: functab entries, then the _func records
  uint64_t pcln_offset_ = 0;
  PclntabFormat format_ = PclntabFormat::kGo120;
  uint32_t magic_ = 0;
  uint8_t min_lc_ = 1;
  uint64_t nfunc_ = 0;
  uint64_t text_start_ = 0;
  uint64_t header_text_start_ = 0;
};

}  // namespace goheap2pprof
