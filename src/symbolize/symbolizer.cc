#include "symbolize/symbolizer.h"

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

uint64_t Symbolizer::distinct_pcs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return frames_cache_.size();
}

uint64_t Symbolizer::failed_lookups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_lookups_;
}

std::optional<std::string_view> Symbolizer::FuncNameForPc(uint64_t pc) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = name_cache_.find(pc);
    if (it != name_cache_.end()) return it->second;
  }
  // Decoded without the lock, so that a capture's two threads (the walk's
  // symbolizing ahead, the build's) do not wait on each other's decoding;
  // either one's answer is the same.
  std::optional<std::string_view> name;
  if (std::optional<FuncRef> f = tab_.FindFunc(pc)) {
    // A corrupt table entry is a failed lookup, as a nil *Func would be.
    // Only the tables a name needs are read, as Func.Name does: the file
    // and line tables are not (a corrupt one fails FramesFor, not this).
    if (Expected<std::string_view> function = tab_.TryFunctionAt(*f, pc)) name = *function;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return name_cache_.emplace(pc, name).first->second;
}

const PcFrames& Symbolizer::FramesFor(uint64_t addr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = frames_cache_.find(addr);
    if (it != frames_cache_.end()) return it->second;
  }
  // Decoded without the lock (see FuncNameForPc); the first answer stored
  // is the one every caller gets.
  PcFrames result = Decode(addr);
  std::lock_guard<std::mutex> lock(mu_);
  const auto [it, added] = frames_cache_.emplace(addr, std::move(result));
  if (added && it->second.lookup_failed) ++failed_lookups_;
  return it->second;
}

PcFrames Symbolizer::Decode(uint64_t addr) const {
  PcFrames result;
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
      frame.printed_name = PrintedName(pf->function);
    }
  }
  // runtime.goexit: allFrames returns nothing, goexit produces no location.
  if (frame.printed_name == "runtime.goexit") return result;
  if (frame.pc == 0 || frame.printed_name.empty() || frame.file.empty() || frame.line == 0) {
    result.lookup_failed = true;
  }
  if (frame.pc == 0) frame.pc = addr - 1;
  result.frames.push_back(std::move(frame));
  return result;
}

std::optional<std::vector<uint64_t>> Symbolizer::ExpandFinalInlineFrame(
    std::span<const uint64_t> stk) {
  if (stk.empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t pc = stk.back();
  const uint64_t tracepc = pc - 1;
  // Most stacks end in the same few PCs (runtime.main, goexit): remember
  // which ones are not inside inlined code. A corrupt table entry anywhere
  // below means no expansion.
  if (not_inlined_final_pcs_.contains(pc)) return std::nullopt;
  std::optional<FuncRef> f = tab_.FindFunc(tracepc);
  if (!f) {
    not_inlined_final_pcs_.insert(pc);
    return std::nullopt;
  }
  Expected<PcFrame> final_frame = tab_.TryFrameAt(*f, tracepc);
  if (!final_frame) return std::nullopt;
  if (!final_frame->inlined) {
    not_inlined_final_pcs_.insert(pc);
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
