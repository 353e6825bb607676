#include "pprof/heap_debug_text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "base/utf8.h"
#include "pprof/stack_warmer.h"

namespace goheap2pprof {
namespace {

// Go's %#x.
std::string GoHex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

// tabwriter counts cell widths in runes.
size_t RuneCount(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

class Tabwriter {
 public:
  explicit Tabwriter(std::string_view text) {
    size_t start = 0;
    while (true) {
      size_t nl = text.find('\n', start);
      std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
      std::vector<std::string_view> cells;
      size_t cstart = 0;
      while (true) {
        size_t tab = line.find('\t', cstart);
        if (tab == std::string_view::npos) {
          cells.push_back(line.substr(cstart));
          break;
        }
        cells.push_back(line.substr(cstart, tab - cstart));
        cstart = tab + 1;
      }
      lines_.push_back(std::move(cells));
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
  }

  std::string Run() {
    std::vector<size_t> widths;
    Format(0, lines_.size(), widths);
    return std::move(out_);
  }

 private:
  static constexpr size_t kMinWidth = 1, kTabWidth = 8, kPadding = 1;

  // text/tabwriter's Writer.format: find column blocks, recursively.
  void Format(size_t line0, size_t line1, std::vector<size_t>& widths) {
    const size_t column = widths.size();
    for (size_t line = line0; line < line1; ++line) {
      if (column + 1 >= lines_[line].size()) continue;
      WriteLines(line0, line, widths);
      line0 = line;
      size_t width = kMinWidth;
      for (; line < line1; ++line) {
        if (column + 1 >= lines_[line].size()) break;
        width = std::max(width, RuneCount(lines_[line][column]) + kPadding);
      }
      widths.push_back(width);
      Format(line0, line, widths);
      widths.pop_back();
      line0 = line;
    }
    WriteLines(line0, line1, widths);
  }

  void WriteLines(size_t line0, size_t line1, const std::vector<size_t>& widths) {
    for (size_t i = line0; i < line1; ++i) {
      const std::vector<std::string_view>& cells = lines_[i];
      for (size_t j = 0; j < cells.size(); ++j) {
        out_.append(cells[j]);
        if (j < widths.size()) Pad(RuneCount(cells[j]), widths[j]);
      }
      // The last line has no newline of its own (text ended there).
      if (i + 1 < lines_.size()) out_.push_back('\n');
    }
  }

  // writePadding with padchar '\t': whole tabs up to the cell width rounded
  // up to the tab width.
  void Pad(size_t text_width, size_t cell_width) {
    cell_width = (cell_width + kTabWidth - 1) / kTabWidth * kTabWidth;
    size_t n = cell_width - std::min(cell_width, text_width);
    out_.append((n + kTabWidth - 1) / kTabWidth, '\t');
  }

  std::vector<std::vector<std::string_view>> lines_;
  std::string out_;
};

int64_t Add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

}  // namespace

std::string GoTabwriter(std::string_view text) { return Tabwriter(text).Run(); }

void AppendStackRecord(std::string& out, std::span<const uint64_t> stack,
                       const RuntimeTraits& traits, Symbolizer& sym, uint64_t bias,
                       bool all_frames) {
  bool show = all_frames;
  std::string lines;
  for (uint64_t pc : stack) {
    const PcFrames& frames = sym.FramesFor(pc - bias);
    for (const SymFrame& f : frames.frames) {
      // CallersFrames skips a PC that is in no function.
      if (f.entry == 0 && f.printed_name.empty()) continue;
      const std::string_view name = f.printed_name;
      if (name.empty()) {
        show = true;
        lines += "#\t" + GoHex(f.pc + bias) + "\n";
      } else if (name != "runtime.goexit" && (show || !HasHiddenByRuntimePrefix(name, traits))) {
        show = true;
        // The runtime prints the pclntab's bytes; a text answer is UTF-8.
        lines += "#\t" + GoHex(f.pc + bias) + "\t" + ValidUtf8(name) + "+" + GoHex(f.pc - f.entry) +
                 "\t" + ValidUtf8(f.file) + ":" + std::to_string(f.line) + "\n";
      }
    }
  }
  if (!show) {
    AppendStackRecord(out, stack, traits, sym, bias, true);
    return;
  }
  out += lines;
  out += "\n";
}

std::string HeapDebugText(std::span<const MemProfileRecord> records, int64_t rate,
                          const RuntimeTraits& traits, Symbolizer& symbolizer,
                          uint64_t symbolizer_bias) {
  std::vector<const MemProfileRecord*> sorted;
  sorted.reserve(records.size());
  for (const MemProfileRecord& r : records) sorted.push_back(&r);
  if (traits.debug_text_sorts_ascending) {
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](auto* a, auto* b) { return a->InUseBytes() < b->InUseBytes(); });
  } else {
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](auto* a, auto* b) { return a->InUseBytes() > b->InUseBytes(); });
  }

  MemProfileRecord total;
  for (const MemProfileRecord* r : sorted) {
    total.alloc_bytes = Add(total.alloc_bytes, r->alloc_bytes);
    total.alloc_objects = Add(total.alloc_objects, r->alloc_objects);
    total.free_bytes = Add(total.free_bytes, r->free_bytes);
    total.free_objects = Add(total.free_objects, r->free_objects);
  }
  // pprof reads alloc == inuse as a 2-column profile; Go bumps alloc by one.
  const int64_t inuse_bytes = total.InUseBytes();
  int64_t alloc_bytes = total.alloc_bytes;
  if (inuse_bytes == alloc_bytes) alloc_bytes = Add(alloc_bytes, 1);

  std::string text = "heap profile: " + std::to_string(total.InUseObjects()) + ": " +
                     std::to_string(inuse_bytes) + " [" + std::to_string(total.alloc_objects) +
                     ": " + std::to_string(alloc_bytes) + "] @ heap/" +
                     std::to_string(Add(rate, rate)) + "\n";
  for (const MemProfileRecord* r : sorted) {
    text += std::to_string(r->InUseObjects()) + ": " + std::to_string(r->InUseBytes()) + " [" +
            std::to_string(r->alloc_objects) + ": " + std::to_string(r->alloc_bytes) + "] @";
    std::span<const uint64_t> stack = r->bucket ? r->bucket->stack : std::span<const uint64_t>();
    for (uint64_t pc : stack) text += " " + GoHex(pc);
    text += "\n";
    AppendStackRecord(text, stack, traits, symbolizer, symbolizer_bias, false);
  }
  return GoTabwriter(text);
}

}  // namespace goheap2pprof
