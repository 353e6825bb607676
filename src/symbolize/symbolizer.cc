#include "symbolize/symbolizer.h"

#include <algorithm>

#include "base/error.h"

namespace goheap2pprof {

Symbolizer::Symbolizer(const Pclntab& pclntab, const RuntimeTraits& traits)
    : tab_(pclntab), traits_(traits) {}

std::string Symbolizer::PrintedName(std::string_view raw) const {
  if (!traits_.frame_function_elides_shapes) return std::string(raw);
  // funcNameForPrint: everything between the first '[' and the last ']'
  // becomes "...".
  size_t open = raw.find('[');
  if (open == std::string_view::npos) return std::string(raw);
  size_t close = raw.rfind(']');
  if (close == std::string_view::npos || close <= open) return std::string(raw);
  std::string out(raw.substr(0, open));
  out += "[...]";
  out += raw.substr(close + 1);
  return out;
}

std::string_view Symbolizer::StoredPrintedName(std::string_view raw) {
  // Most names have no shape to elide: those view the pclntab's bytes.
  if (!traits_.frame_function_elides_shapes || raw.find('[') == std::string_view::npos) return raw;
  std::string printed = PrintedName(raw);
  if (printed == raw) return raw;
  return printed_names_.emplace_back(std::move(printed));
}

uint64_t Symbolizer::distinct_pcs() const {
  std::lock_guard<AdaptiveMutex> lock(mu_);
  return distinct_pcs_;
}

uint64_t Symbolizer::failed_lookups() const {
  std::lock_guard<AdaptiveMutex> lock(mu_);
  return failed_lookups_;
}

Symbolizer::PcEntry& Symbolizer::Entry(uint64_t pc) {
  if (pc == 0) return zero_pc_;
  if (PcEntry* const* found = entries_.Find(pc)) return **found;
  if (used_in_last_chunk_ == last_chunk_size_) {
    last_chunk_size_ = std::clamp(2 * last_chunk_size_, kFirstChunk, kLargestChunk);
    chunks_.push_back(std::make_unique<PcEntry[]>(last_chunk_size_));
    used_in_last_chunk_ = 0;
  }
  PcEntry* e = &chunks_.back()[used_in_last_chunk_++];
  entries_.Insert(pc, e);
  return *e;
}

Symbolizer::PcEntry& Symbolizer::Known(uint64_t pc, bool name, bool frames) {
  PcEntry* e = nullptr;
  bool need_name = false, need_frames = false;
  {
    std::lock_guard<AdaptiveMutex> lock(mu_);
    e = &Entry(pc);
    need_name = name && !e->name_known;
    need_frames = frames && !e->frames_known;
    if (!need_name && !need_frames) return *e;
  }
  // Decoded without the lock, so that a capture's two threads (the walk's
  // symbolizing ahead, the build's) do not wait on each other's decoding;
  // either one's answer is the same, and e does not move meanwhile. Once
  // known, an answer is never written again: it is read without the lock.
  std::optional<std::string_view> decoded_name;
  if (need_name) decoded_name = DecodeName(pc);
  SymFrame frame;
  if (need_frames) frame = Decode(pc);
  std::lock_guard<AdaptiveMutex> lock(mu_);
  if (need_name && !e->name_known) {
    e->name = decoded_name;
    e->name_known = true;
  }
  if (need_frames && !e->frames_known) StoreFrames(pc, std::move(frame), *e);
  return *e;
}

std::optional<std::string_view> Symbolizer::FuncNameForPc(uint64_t pc) {
  return Known(pc, /*name=*/true, /*frames=*/false).name;
}

const PcFrames& Symbolizer::FramesFor(uint64_t addr) {
  return Known(addr, /*name=*/false, /*frames=*/true).frames;
}

Symbolizer::NameAndFrames Symbolizer::FuncNameForPcAndFrames(uint64_t pc) {
  const PcEntry& e = Known(pc, /*name=*/true, /*frames=*/true);
  return {e.name, &e.frames};
}

std::optional<std::string_view> Symbolizer::DecodeName(uint64_t pc) const {
  std::optional<FuncRef> f = tab_.FindFunc(pc);
  if (!f) return std::nullopt;
  // A corrupt table entry is a failed lookup, as a nil *Func would be. Only
  // the tables a name needs are read, as Func.Name does: the file and line
  // tables are not (a corrupt one fails FramesFor, not this).
  Expected<std::string_view> function = tab_.TryFunctionAt(*f, pc);
  if (!function) return std::nullopt;
  return *function;
}

SymFrame Symbolizer::Decode(uint64_t addr) const {
  SymFrame frame;
  // CallersFrames looks the function up at the return PC itself, then
  // evaluates everything at the call instruction (PC - 1). A corrupt table
  // entry leaves the frame empty: a failed lookup.
  if (std::optional<FuncRef> f = tab_.FindFunc(addr)) {
    uint64_t pc = addr > f->entry ? addr - 1 : addr;
    if (Expected<PcFrame> pf = tab_.TryFrameAt(*f, pc)) {
      frame.pc = pc;
      frame.function = pf->function;
      frame.file = pf->file;
      frame.line = pf->line;
      frame.start_line = pf->start_line;
      frame.inlined = pf->inlined;
      frame.entry = f->entry;
    }
  }
  return frame;
}

void Symbolizer::StoreFrames(uint64_t addr, SymFrame frame, PcEntry& e) {
  e.frames_known = true;
  ++distinct_pcs_;
  e.frame = std::move(frame);
  e.frame.printed_name = StoredPrintedName(e.frame.function);  // "" when not found
  // runtime.goexit: allFrames returns nothing, goexit produces no location.
  if (e.frame.printed_name == "runtime.goexit") return;
  if (e.frame.pc == 0 || e.frame.printed_name.empty() || e.frame.file.empty() ||
      e.frame.line == 0) {
    e.frames.lookup_failed = true;
    ++failed_lookups_;
  }
  if (e.frame.pc == 0) e.frame.pc = addr - 1;
  e.frames.frames = std::span<const SymFrame>(&e.frame, 1);
}

std::optional<std::vector<uint64_t>> Symbolizer::ExpandFinalInlineFrame(
    std::span<const uint64_t> stk, bool* plain) {
  bool ignored = false;
  bool& known_plain = plain != nullptr ? *plain : ignored;
  known_plain = false;
  if (stk.empty()) return std::nullopt;
  std::lock_guard<AdaptiveMutex> lock(mu_);
  const uint64_t pc = stk.back();
  const uint64_t tracepc = pc - 1;
  // Most stacks end in the same few PCs (runtime.main, goexit): remember
  // which ones are not inside inlined code. A corrupt table entry anywhere
  // below means no expansion.
  PcEntry& e = Entry(pc);
  if (e.final_not_inlined) {
    known_plain = true;
    return std::nullopt;
  }
  std::optional<FuncRef> f = tab_.FindFunc(tracepc);
  if (!f) {
    e.final_not_inlined = known_plain = true;
    return std::nullopt;
  }
  Expected<PcFrame> final_frame = tab_.TryFrameAt(*f, tracepc);
  if (!final_frame) return std::nullopt;
  if (!final_frame->inlined) {
    e.final_not_inlined = known_plain = true;
    return std::nullopt;
  }
  std::vector<uint64_t> out(stk.begin(), stk.end() - 1);
  // Walk the inline chain outward from tracepc, re-adding each level's
  // "return PC", skipping wrappers the way the traceback does.
  uint8_t callee_id = 0;  // FuncIDNormal: the leaf is known not elided
  const FuncIds& ids = traits_.func_ids;
  uint64_t level_pc = tracepc;
  for (int depth = 0; depth < 4096; ++depth) {
    Expected<PcFrame> fr = tab_.TryFrameAt(*f, level_pc);
    if (!fr) return std::nullopt;
    bool elide_wrapper =
        !(callee_id == ids.gopanic || callee_id == ids.sigpanic || callee_id == ids.panicwrap);
    if (!(fr->func_id == ids.wrapper && elide_wrapper)) out.push_back(level_pc + 1);
    callee_id = fr->func_id;
    Expected<std::optional<uint64_t>> parent = tab_.TryInlineParentPc(*f, level_pc);
    if (!parent) return std::nullopt;
    if (!*parent) break;  // that was the physical function
    level_pc = **parent;
  }
  return out;
}

}  // namespace goheap2pprof
