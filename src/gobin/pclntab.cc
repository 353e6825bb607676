#include "gobin/pclntab.h"

namespace goheap2pprof {

namespace {

// Magics of the pre-1.18 layouts, recognised only to name them in errors.
constexpr uint32_t kMagicGo116 = 0xfffffffa;
constexpr uint32_t kMagicGo12 = 0xfffffffb;

// PCDATA / FUNCDATA indices (runtime/symtab.go, internal/abi/symtab.go).
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint32_t kFuncdataInlTree = 3;

// _func fixed-part sizes and inlinedCall sizes per layout.
constexpr uint64_t kFuncHeaderGo118 = 40;
constexpr uint64_t kFuncHeaderGo120 = 44;
constexpr uint64_t kInlinedCallGo118 = 20;
constexpr uint64_t kInlinedCallGo120 = 16;

uint32_t ByteSwap32(uint32_t v) { return __builtin_bswap32(v); }

// ByteView::TryUvarint's decoding over a raw range, for the pc-value tables'
// hot loop: false (and *off unchanged) when the varint does not end inside
// [0, size) within ten bytes; the caller then asks TryUvarint for the Error.
inline bool DecodeUvarint(const uint8_t* data, uint64_t size, uint64_t* off, uint64_t* out) {
  uint64_t at = *off;
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && at < size; shift += 7) {
    const uint8_t b = data[at++];
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *off = at;
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

Pclntab::Pclntab(Bytes table, uint64_t text_start, Bytes gofunc)
    : Pclntab(TryParse(table, text_start, gofunc).value()) {}

GoFuncBytes GoFuncBytes::Of(Bytes bytes) {
  // Within size: GoFuncAt checks before it reads.
  return GoFuncBytes{.size = bytes.size(), .read = [bytes](uint64_t off, uint64_t len) {
                       return std::optional<Bytes>(bytes.subspan(off, len));
                     }};
}

Expected<Pclntab> Pclntab::TryParse(Bytes table, uint64_t text_start, Bytes gofunc) {
  return TryParse(table, text_start, GoFuncBytes::Of(gofunc));
}

Expected<Pclntab> Pclntab::TryParse(Bytes table, uint64_t text_start, GoFuncBytes gofunc) {
  Pclntab tab;
  tab.table_ = ByteView(table, "pclntab");
  tab.gofunc_ = std::move(gofunc);
  tab.text_start_ = text_start;
  if (std::optional<Error> bad = tab.ParseHeader()) return std::move(*bad);
  return tab;
}

std::optional<Error> Pclntab::ParseMagic() {
  magic_ = table_.U32(0);
  if (magic_ == kPclntabMagicGo118) {
    format_ = PclntabFormat::kGo118;
  } else if (magic_ == kPclntabMagicGo120) {
    format_ = PclntabFormat::kGo120;
  } else if (magic_ == kMagicGo116 || magic_ == kMagicGo12) {
    return Error(ErrorKind::kUnsupported, "pclntab magic ", Hex(magic_),
                 " is from Go 1.17 or older; Go 1.18+ is required");
  } else if (ByteSwap32(magic_) == kPclntabMagicGo118 || ByteSwap32(magic_) == kPclntabMagicGo120) {
    return Error(ErrorKind::kUnsupported, "pclntab is big-endian; only little-endian is supported");
  } else {
    return Error(ErrorKind::kMalformed, "pclntab: unknown magic ", Hex(magic_));
  }
  return std::nullopt;
}

std::optional<Error> Pclntab::ParseHeader() {
  if (!table_.Has(0, kPcHeaderSize)) {
    return Error(ErrorKind::kMalformed, "pclntab: ", table_.size(),
                 " bytes is too short for a pcHeader");
  }
  if (std::optional<Error> bad = ParseMagic()) return bad;
  if (table_.U8(4) != 0 || table_.U8(5) != 0) {
    return Error(ErrorKind::kMalformed, "pclntab: nonzero header padding");
  }
  min_lc_ = table_.U8(6);
  if (min_lc_ != 1 && min_lc_ != 2 && min_lc_ != 4) {
    return Error(ErrorKind::kMalformed, "pclntab: bad PC quantum ", int{min_lc_});
  }
  if (table_.U8(7) != 8) {
    return Error(ErrorKind::kUnsupported, "pclntab: pointer size ", int{table_.U8(7)},
                 "; only 64-bit targets are supported");
  }
  nfunc_ = table_.U64(8);
  header_text_start_ = table_.U64(24);

  // Each table runs from its offset to the end of the pclntab: the header
  // gives no lengths, and reads are bounds-checked against the whole table.
  // (The header's 72 bytes were checked above, so its reads cannot fail.)
  struct Tail {
    uint64_t header_off;
    std::string_view what;
    ByteView* view;
  };
  for (const Tail& t :
       {Tail{32, "pclntab funcnametab", &funcnametab_}, Tail{40, "pclntab cutab", &cutab_},
        Tail{48, "pclntab filetab", &filetab_}, Tail{56, "pclntab pctab", &pctab_},
        Tail{64, "pclntab functab", &functab_}}) {
    uint64_t off = table_.U64(t.header_off);
    if (off > table_.size()) {
      return Error(ErrorKind::kMalformed, "pclntab: ", t.what, " offset ", Hex(off),
                   " is beyond the ", table_.size(), "-byte table");
    }
    *t.view = table_.Sub(off, table_.size() - off, t.what);
  }
  pcln_offset_ = table_.U64(64);

  // nfunc+1 functab entries of 8 bytes must fit; this also bounds nfunc,
  // and FtabEntryOff reads them unchecked.
  std::optional<uint64_t> ftab_size = CheckedMul(nfunc_, 8);
  if (ftab_size) ftab_size = CheckedAdd(*ftab_size, 8);
  if (!ftab_size || !functab_.Has(0, *ftab_size)) {
    return Error(ErrorKind::kMalformed, "pclntab: nfunc ", nfunc_, " does not fit in the ",
                 functab_.size(), "-byte functab");
  }
  return std::nullopt;
}

uint32_t Pclntab::FtabEntryOff(uint64_t index) const {
  // index <= nfunc_: ParseHeader checked that nfunc+1 entries fit, and every
  // symbolized PC binary-searches here, so no check per read.
  return LoadU32(functab_.data().data() + index * 8);
}

uint64_t Pclntab::text_end() const { return text_start_ + FtabEntryOff(nfunc_); }

FuncRef Pclntab::FuncAt(uint32_t index) const {
  if (index >= nfunc_) {
    throw Error(ErrorKind::kInternal, "pclntab: function index ", index, " out of range (nfunc ",
                nfunc_, ")");
  }
  FuncRef f;
  f.index = index;
  f.entry = text_start_ + FtabEntryOff(index);
  f.func_off = pcln_offset_ + LoadU32(functab_.data().data() + uint64_t{index} * 8 + 4);
  return f;
}

std::optional<FuncRef> Pclntab::FindFunc(uint64_t pc) const {
  if (pc < text_start_ || nfunc_ == 0) return std::nullopt;
  uint64_t off = pc - text_start_;
  // ftab[nfunc].entryoff is the end of text.
  if (off >= FtabEntryOff(nfunc_) || off < FtabEntryOff(0)) return std::nullopt;
  // Last i in [0, nfunc) with entryoff(i) <= off. O(log nfunc) even if the
  // table is unsorted garbage.
  uint64_t lo = 0;
  uint64_t hi = nfunc_;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (FtabEntryOff(mid) <= off) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return FuncAt(static_cast<uint32_t>(lo));
}

Expected<Pclntab::FuncHeader> Pclntab::ReadFunc(const FuncRef& f) const {
  bool go120 = format_ == PclntabFormat::kGo120;
  uint64_t fixed = go120 ? kFuncHeaderGo120 : kFuncHeaderGo118;
  Expected<ByteView> sub = table_.TrySub(f.func_off, fixed, "pclntab _func");
  if (!sub) return sub.error();
  // Every read below is inside the `fixed` bytes just checked.
  const ByteView& func = *sub;
  FuncHeader h;
  h.off = f.func_off;
  h.entry_off = func.U32(0);
  h.name_off = func.I32(4);
  h.pcfile = func.U32(20);
  h.pcln = func.U32(24);
  h.npcdata = func.U32(28);
  h.cu_offset = func.U32(32);
  if (go120) {
    h.start_line = func.I32(36);
    h.func_id = func.U8(40);
    h.nfuncdata = func.U8(43);
  } else {
    h.func_id = func.U8(36);
    h.nfuncdata = func.U8(39);
  }
  h.pcdata_off = f.func_off + fixed;
  // The pcdata and funcdata offset arrays must be inside the table; PcData
  // and FuncData rely on it.
  const uint64_t arrays = (uint64_t{h.npcdata} + h.nfuncdata) * 4;
  if (!table_.Has(h.pcdata_off, arrays)) return table_.OutOfRange(h.pcdata_off, arrays);
  return h;
}

uint32_t Pclntab::PcData(const FuncHeader& h, uint32_t index) const {
  // In range: ReadFunc checked the arrays.
  if (index >= h.npcdata) return 0;
  return table_.U32(h.pcdata_off + uint64_t{index} * 4);
}

std::optional<uint32_t> Pclntab::FuncData(const FuncHeader& h, uint32_t index) const {
  if (index >= h.nfuncdata) return std::nullopt;
  uint32_t off = table_.U32(h.pcdata_off + (uint64_t{h.npcdata} + index) * 4);
  if (off == 0xffffffff) return std::nullopt;
  return off;
}

std::string_view Pclntab::FuncName(const FuncRef& f) const { return TryFuncName(f).value(); }

Expected<std::string_view> Pclntab::TryFuncName(const FuncRef& f) const {
  Expected<FuncHeader> h = ReadFunc(f);
  if (!h) return h.error();
  return NameAt(h->name_off);
}

uint8_t Pclntab::FuncId(const FuncRef& f) const { return ReadFunc(f).value().func_id; }

Expected<int32_t> Pclntab::TrySpDelta(const FuncRef& f, uint64_t pc) const {
  // _func.pcsp follows entryOff, nameOff, args and deferreturn in both layouts.
  Expected<ByteView> field = table_.TrySub(f.func_off + 16, 4, "pclntab _func.pcsp");
  if (!field) return field.error();
  return PcValueAt(f.entry, field->U32(0), pc);
}

Expected<uint8_t> Pclntab::TryFuncFlag(const FuncRef& f) const {
  // _func.flag is the byte after funcID: at 41 (1.20+, after startLine) or 37.
  const uint64_t at = format_ == PclntabFormat::kGo120 ? 41 : 37;
  Expected<ByteView> field = table_.TrySub(f.func_off + at, 1, "pclntab _func.flag");
  if (!field) return field.error();
  return field->U8(0);
}

Expected<std::string_view> Pclntab::NameAt(int32_t name_off) const {
  if (name_off < 0) {
    return Error(ErrorKind::kMalformed, "pclntab: negative function name offset ", name_off);
  }
  return funcnametab_.TryCString(static_cast<uint32_t>(name_off), 64 * 1024);
}

Expected<std::string_view> Pclntab::FileAt(const FuncHeader& h, int32_t fileno) const {
  if (fileno < 0) return std::string_view("?");
  uint64_t index = uint64_t{h.cu_offset} + static_cast<uint32_t>(fileno);
  Expected<uint32_t> file_off = cutab_.TryU32(index * 4);
  if (!file_off) return file_off.error();
  if (*file_off == 0xffffffff) return std::string_view("?");
  return filetab_.TryCString(*file_off, 64 * 1024);
}

int32_t Pclntab::PcValue(const FuncRef& f, uint32_t table_off, uint64_t pc) const {
  return PcValueAt(f.entry, table_off, pc).value();
}

Expected<int32_t> Pclntab::PcValueAt(uint64_t entry, uint32_t table_off, uint64_t pc) const {
  if (table_off == 0) return -1;
  // Follows runtime.pcvalue/step. Values and PC deltas are 32-bit in the
  // runtime, so wrap-around is computed in uint32 exactly as it does. Every
  // step consumes at least two bytes, so the loop ends within the table.
  // Every PC symbolized walks these tables: the bytes are read through a
  // raw, bounds-checked pointer, and only a table that fails asks pctab_
  // for its Error.
  const uint8_t* const data = pctab_.data().data();
  const uint64_t size = pctab_.size();
  uint64_t p = table_off;
  uint32_t val = static_cast<uint32_t>(-1);
  uint64_t cur = entry;
  bool first = true;
  while (true) {
    if (p >= size) return pctab_.OutOfRange(p, 1);
    if (data[p] == 0 && !first) return -1;
    first = false;
    uint64_t uvdelta = 0;
    if (!DecodeUvarint(data, size, &p, &uvdelta)) return pctab_.TryUvarint(&p).error();
    val += (-(static_cast<uint32_t>(uvdelta) & 1)) ^ (static_cast<uint32_t>(uvdelta) >> 1);
    uint64_t pcdelta = 0;
    if (!DecodeUvarint(data, size, &p, &pcdelta)) return pctab_.TryUvarint(&p).error();
    std::optional<uint64_t> next =
        CheckedAdd(cur, uint64_t{static_cast<uint32_t>(pcdelta)} * min_lc_);
    if (!next) {
      return Error(ErrorKind::kMalformed, "pclntab: pc table at ", Hex(table_off),
                   " runs past the end of the address space");
    }
    cur = *next;
    if (pc < cur) return static_cast<int32_t>(val);
  }
}

Expected<std::optional<Pclntab::InlinedCall>> Pclntab::InlinedCallAt(const FuncRef& f,
                                                                     const FuncHeader& h,
                                                                     uint64_t pc) const {
  Expected<int32_t> ix = PcValueAt(f.entry, PcData(h, kPcdataInlTreeIndex), pc);
  if (!ix) return ix.error();
  if (*ix < 0) return std::optional<InlinedCall>();
  std::optional<uint32_t> tree = FuncData(h, kFuncdataInlTree);
  if (!tree) {
    return Error(ErrorKind::kMalformed, "pclntab: function at ", Hex(f.entry), " has inline index ",
                 *ix, " at ", Hex(pc), " but no inline tree");
  }
  InlinedCall call;
  if (format_ == PclntabFormat::kGo120) {
    // {u8 funcID; u8 pad[3]; i32 nameOff; i32 parentPc; i32 startLine}
    Expected<ByteView> sub = GoFuncAt(uint64_t{*tree} + uint64_t(*ix) * kInlinedCallGo120,
                                      kInlinedCallGo120, "inlinedCall");
    if (!sub) return sub.error();
    const ByteView& e = *sub;
    call.func_id = e.U8(0);
    call.name_off = e.I32(4);
    call.parent_pc = e.I32(8);
    call.start_line = e.I32(12);
  } else {
    // {i16 parent; u8 funcID; u8 pad; i32 file; i32 line; i32 func; i32 parentPc}
    Expected<ByteView> sub = GoFuncAt(uint64_t{*tree} + uint64_t(*ix) * kInlinedCallGo118,
                                      kInlinedCallGo118, "inlinedCall");
    if (!sub) return sub.error();
    const ByteView& e = *sub;
    call.func_id = e.U8(2);
    call.name_off = e.I32(12);
    call.parent_pc = e.I32(16);
  }
  return std::optional<InlinedCall>(call);
}

Expected<ByteView> Pclntab::GoFuncAt(uint64_t off, uint64_t len, std::string_view what) const {
  if (off > gofunc_.size || len > gofunc_.size - off) {
    return Error(ErrorKind::kMalformed, "pclntab funcdata (go:func.*): read of ", len,
                 " bytes at offset ", Hex(off), " is outside its ", gofunc_.size, " bytes");
  }
  const std::optional<Bytes> bytes = gofunc_.read ? gofunc_.read(off, len) : std::nullopt;
  if (!bytes || bytes->size() != len) {
    return Error(ErrorKind::kMalformed, "pclntab funcdata (go:func.*): ", len, " bytes at offset ",
                 Hex(off), " could not be read");
  }
  return ByteView(*bytes, what);
}

PcFrame Pclntab::FrameAt(const FuncRef& f, uint64_t pc) const { return TryFrameAt(f, pc).value(); }

Expected<PcFrame> Pclntab::TryFrameAt(const FuncRef& f, uint64_t pc) const {
  Expected<FuncHeader> h = ReadFunc(f);
  if (!h) return h.error();
  PcFrame frame;
  frame.entry = f.entry;
  // File and line always come from the physical function's tables: for an
  // inlined body they describe the inlined source position already.
  Expected<int32_t> fileno = PcValueAt(f.entry, h->pcfile, pc);
  if (!fileno) return fileno.error();
  Expected<int32_t> line = PcValueAt(f.entry, h->pcln, pc);
  if (!line) return line.error();
  if (*fileno == -1 || *line == -1) {
    // runtime.funcline1 reports "?":0 when either table has no value.
    frame.file = "?";
    frame.line = 0;
  } else {
    Expected<std::string_view> file = FileAt(*h, *fileno);
    if (!file) return file.error();
    frame.file = *file;
    frame.line = *line;
  }
  Expected<std::optional<InlinedCall>> call = InlinedCallAt(f, *h, pc);
  if (!call) return call.error();
  int32_t name_off = h->name_off;
  if (*call) {
    name_off = (*call)->name_off;
    frame.start_line = (*call)->start_line;
    frame.func_id = (*call)->func_id;
    frame.inlined = true;
  } else {
    frame.start_line = h->start_line;
    frame.func_id = h->func_id;
  }
  Expected<std::string_view> name = NameAt(name_off);
  if (!name) return name.error();
  frame.function = *name;
  return frame;
}

Expected<std::string_view> Pclntab::TryFunctionAt(const FuncRef& f, uint64_t pc) const {
  Expected<FuncHeader> h = ReadFunc(f);
  if (!h) return h.error();
  Expected<std::optional<InlinedCall>> call = InlinedCallAt(f, *h, pc);
  if (!call) return call.error();
  return NameAt(*call ? (*call)->name_off : h->name_off);
}

std::optional<uint64_t> Pclntab::InlineParentPc(const FuncRef& f, uint64_t pc) const {
  return TryInlineParentPc(f, pc).value();
}

Expected<std::optional<uint64_t>> Pclntab::TryInlineParentPc(const FuncRef& f, uint64_t pc) const {
  Expected<FuncHeader> h = ReadFunc(f);
  if (!h) return h.error();
  Expected<std::optional<InlinedCall>> call = InlinedCallAt(f, *h, pc);
  if (!call) return call.error();
  if (!*call) return std::optional<uint64_t>();
  // parentPc is an offset from the function entry (signed in the runtime).
  return std::optional<uint64_t>(f.entry +
                                 static_cast<uint64_t>(static_cast<int64_t>((*call)->parent_pc)));
}

}  // namespace goheap2pprof
