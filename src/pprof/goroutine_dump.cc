#include "pprof/goroutine_dump.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <string_view>

#include "base/hash_index.h"
#include "base/utf8.h"

namespace goheap2pprof {

namespace {

constexpr uint32_t kGrunning = 2;
constexpr uint32_t kGsyscall = 3;
constexpr uint32_t kGwaiting = 4;
constexpr uint32_t kGleaked = 10;  // 1.26+
constexpr uint32_t kGscan = 0x1000;

bool AtLeast(const GoVersion& v, int minor) {
  return v.major > 1 || (v.major == 1 && v.minor >= minor);
}

// The runtime's hex(): 0x and lowercase digits.
std::string RuntimeHex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// gStatusStrings, indexed by status (empty slots print as empty strings,
// as the runtime's array has them; 10 and 11 exist from 1.26).
std::string StatusName(uint32_t status, const GoVersion& v) {
  static constexpr std::string_view kNames[] = {
      "idle", "runnable", "running",   "syscall",   "waiting", "",
      "dead", "",         "copystack", "preempted", "leaked",  "waiting for cgo callback"};
  const size_t known = AtLeast(v, 26) ? 12 : 10;
  return status < known ? std::string(kNames[status]) : "???";
}

// isExportedRuntime: up to 1.22 the first letter after "runtime."; from
// 1.23 the method and its receiver type must both be exported.
bool IsExportedRuntime(std::string_view name, const GoVersion& v) {
  constexpr std::string_view kPrefix = "runtime.";
  if (!name.starts_with(kPrefix)) return false;
  name.remove_prefix(kPrefix.size());
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  if (!AtLeast(v, 23)) return !name.empty() && upper(name[0]);
  std::string_view rcvr;
  if (size_t dot = name.rfind('.'); dot != std::string_view::npos) {
    rcvr = name.substr(0, dot);
    name = name.substr(dot + 1);
    if (rcvr.size() >= 3 && rcvr.starts_with("(*") && rcvr.ends_with(')')) {
      rcvr = rcvr.substr(2, rcvr.size() - 3);
    }
  }
  return !name.empty() && upper(name[0]) && (rcvr.empty() || upper(rcvr[0]));
}

// showfuncinfo at GOTRACEBACK=1, which runtime.Stack forces (wrappers are
// already left out of the PC list, by the same rule).
bool ShowFunction(std::string_view name, bool first, const GoVersion& v) {
  if (AtLeast(v, 25) && (name == "runtime.runFinalizers" || name == "runtime.runCleanups")) {
    return true;
  }
  if (name == "runtime.gopanic" && !first) return true;
  return name.find('.') != std::string_view::npos &&
         (!name.starts_with("runtime.") || IsExportedRuntime(name, v));
}

// "name(...)\n\tfile:line +0xoff\n", as traceback2 prints a frame.
std::string FrameText(const GoroutineFrame& f) {
  std::string text = f.function + "(...)\n\t" + f.file + ":" + std::to_string(f.line);
  if (f.offset) text += " +" + RuntimeHex(*f.offset);
  return text + "\n";
}

// Up to 1.20 gentraceback walks 100 physical frames, shown or not, and
// says "additional frames elided" when it printed exactly 100; from 1.21,
// 50 innermost and 50 outermost shown frames with the count between.
std::string FramesText(const std::vector<GoroutineFrame>& frames, bool all, const GoVersion& v) {
  std::vector<const GoroutineFrame*> shown;
  size_t physical = 0;
  for (const GoroutineFrame& f : frames) {
    if (!AtLeast(v, 21) && physical >= 100) break;
    if (all || f.shown) shown.push_back(&f);
    if (!f.inlined) ++physical;
  }
  std::string out;
  if (!AtLeast(v, 21) || shown.size() <= 100) {
    for (const GoroutineFrame* f : shown) out += FrameText(*f);
    if (!AtLeast(v, 21) && shown.size() == 100) out += "...additional frames elided...\n";
    return out;
  }
  for (size_t i = 0; i < 50; ++i) out += FrameText(*shown[i]);
  out += "..." + std::to_string(shown.size() - 100) + " frames elided...\n";
  for (size_t i = shown.size() - 50; i < shown.size(); ++i) out += FrameText(*shown[i]);
  return out;
}

std::string CreatedByText(const GoroutineDumpInput& in, GoroutineSymbols& symbols,
                          const Goroutine& g) {
  std::optional<GoroutineCreator> c = symbols.CreatedBy(g);
  if (!c) return "";
  std::string out = "created by " + c->function;
  if (AtLeast(in.version, 21) && c->parent_goid != 0) {
    out += " in goroutine " + std::to_string(c->parent_goid);
  }
  out += "\n\t" + c->file + ":" + std::to_string(c->line);
  if (c->offset) out += " +" + RuntimeHex(*c->offset);
  return out + "\n";
}

}  // namespace

std::optional<GoroutineSymbols::Level> GoroutineSymbols::Decode(uint64_t sym) const {
  std::optional<FuncRef> f = in_.pclntab->FindFunc(sym);
  if (!f) return std::nullopt;
  Expected<PcFrame> frame = in_.pclntab->TryFrameAt(*f, sym);
  if (!frame) return std::nullopt;
  return Level{.function = frame->function == "runtime.gopanic"
                               ? "panic"
                               : in_.symbolizer->PrintedName(frame->function),
               .file = frame->file,
               .line = frame->line,
               .entry = frame->entry,
               .inlined = frame->inlined,
               .shown_first = ShowFunction(frame->function, true, in_.version),
               .shown_later = ShowFunction(frame->function, false, in_.version)};
}

const GoroutineSymbols::Level* GoroutineSymbols::LevelAt(uint64_t sym) {
  auto [it, inserted] = levels_.try_emplace(sym);
  if (inserted) it->second = Decode(sym);
  return it->second ? &*it->second : nullptr;
}

std::vector<GoroutineFrame> GoroutineSymbols::Frames(const Goroutine& g) {
  std::vector<GoroutineFrame> out;
  bool any_shown = false;
  // The first level listed for a physical frame is its return address (the
  // others are inline parents' "entry+parentPc+1"): the +0x offset's base.
  uint64_t frame_pc = 0;
  for (uint64_t pc : g.pcs) {
    if (frame_pc == 0) frame_pc = pc - in_.bias;
    // The runtime lists sym+1 for every level: sym is where it symbolizes.
    const Level* level = LevelAt(pc - 1 - in_.bias);
    if (level == nullptr) {
      frame_pc = 0;
      continue;
    }
    GoroutineFrame d{.function = level->function,
                     .file = std::string(level->file),
                     .line = level->line,
                     .offset = std::nullopt,
                     .inlined = level->inlined,
                     .shown = any_shown ? level->shown_later : level->shown_first};
    any_shown = any_shown || d.shown;
    if (!level->inlined && frame_pc > level->entry) d.offset = frame_pc - level->entry;
    if (!level->inlined) frame_pc = 0;
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<GoroutineCreator> GoroutineSymbols::DecodeCreator(uint64_t pc) const {
  std::optional<FuncRef> f = in_.pclntab->FindFunc(pc);
  if (!f) return std::nullopt;
  Expected<std::string_view> name = in_.pclntab->TryFuncName(*f);
  if (!name || !ShowFunction(*name, false, in_.version)) return std::nullopt;
  const bool past_entry = pc > f->entry;
  Expected<PcFrame> at = in_.pclntab->TryFrameAt(*f, past_entry ? pc - 1 : pc);
  if (!at) return std::nullopt;
  GoroutineCreator c{.function = in_.symbolizer->PrintedName(*name),
                     .file = std::string(at->file),
                     .line = at->line,
                     .offset = std::nullopt,
                     .parent_goid = 0};
  if (past_entry) c.offset = pc - f->entry;
  return c;
}

std::optional<GoroutineCreator> GoroutineSymbols::CreatedBy(const Goroutine& g) {
  if (g.goid == 1) return std::nullopt;
  const uint64_t pc = g.gopc - in_.bias;
  auto [it, inserted] = creators_.try_emplace(pc);
  if (inserted) it->second = DecodeCreator(pc);
  std::optional<GoroutineCreator> c = it->second;
  if (c) c->parent_goid = g.parent_goid;
  return c;
}

std::vector<GoroutineFrame> GoroutineFrames(const GoroutineDumpInput& in, const Goroutine& g) {
  return GoroutineSymbols(in).Frames(g);
}

std::optional<GoroutineCreator> GoroutineCreatedBy(const GoroutineDumpInput& in,
                                                   const Goroutine& g) {
  return GoroutineSymbols(in).CreatedBy(g);
}

bool GoroutineLeaked(const GoroutineDumpInput& in, const Goroutine& g) {
  return AtLeast(in.version, 26) && (g.status & ~kGscan) == kGleaked;
}

bool GoroutineParked(const GoroutineDumpInput& in, const Goroutine& g) {
  return (g.status & ~kGscan) == kGwaiting || GoroutineLeaked(in, g);
}

std::string GoroutineWaitReason(const GoroutineDumpInput& in, const Goroutine& g) {
  if (GoroutineParked(in, g) && g.wait_reason != 0) {
    return g.wait_reason < in.wait_reasons.size() ? in.wait_reasons[g.wait_reason]
                                                  : "unknown wait reason";
  }
  return StatusName(g.status & ~kGscan, in.version);
}

std::string GoroutineState(const GoroutineDumpInput& in, const Goroutine& g) {
  std::string text = GoroutineWaitReason(in, g);
  return GoroutineLeaked(in, g) ? text + " (leaked)" : text;
}

int64_t GoroutineWaitMinutes(const GoroutineDumpInput& in, const Goroutine& g) {
  const uint32_t status = g.status & ~kGscan;
  if ((status != kGwaiting && status != kGsyscall) || g.wait_since == 0 || !in.now) return 0;
  return std::max<int64_t>(0, (*in.now - g.wait_since) / 60'000'000'000);
}

std::string GoroutineStatusText(const GoroutineDumpInput& in, const Goroutine& g) {
  std::string text = GoroutineState(in, g);
  if ((g.status & kGscan) != 0) text += " (scan)";
  if (const int64_t minutes = GoroutineWaitMinutes(in, g); minutes >= 1) {
    text += ", " + std::to_string(minutes) + " minutes";
  }
  if (g.locked_to_thread) text += ", locked to thread";
  return text;
}

namespace {

// The frames text of each distinct stack, rendered once: most goroutines
// of a program share their stack with many others (100,000 goroutines
// parked at one site made a dump spend most of its time in rendering the
// same frames again, before). The texts of the first kMaxStacks stacks are
// kept, so that a dump of all different stacks does not hold its text twice.
class StackTexts {
 public:
  explicit StackTexts(const GoroutineDumpInput& in) : in_(in), symbols_(in) {}

  GoroutineSymbols& symbols() { return symbols_; }

  // g's frames text; g must outlive this (its PCs are the key).
  const std::string& For(const Goroutine& g) {
    const std::string_view key(reinterpret_cast<const char*>(g.pcs.data()),
                               g.pcs.size() * sizeof(uint64_t));
    const auto key_of = [this](uint32_t entry) { return keys_[entry]; };
    const uint32_t next = static_cast<uint32_t>(keys_.size());
    const uint32_t at = index_.FindOrInsert(key, next, key_of);
    if (at == next) {
      keys_.push_back(key);
      if (texts_.size() < kMaxStacks) texts_.push_back(Render(g));
    }
    if (at < texts_.size()) return texts_[at];
    uncached_ = Render(g);
    return uncached_;
  }

 private:
  static constexpr size_t kMaxStacks = 16384;

  std::string Render(const Goroutine& g) {
    const std::vector<GoroutineFrame> frames = symbols_.Frames(g);
    std::string text = FramesText(frames, false, in_.version);
    return text.empty() ? FramesText(frames, true, in_.version) : text;
  }

  const GoroutineDumpInput& in_;
  GoroutineSymbols symbols_;
  HashIndex index_;
  std::vector<std::string_view> keys_;  // each stack's PCs, as bytes
  std::vector<std::string> texts_;
  std::string uncached_;
};

}  // namespace

namespace {

// One rune of s at i as Go's range over a string decodes it: U+FFFD and
// width 1 for an ill-formed byte (flagged by *invalid).
char32_t DecodeRune(std::string_view s, size_t i, size_t* width, bool* invalid) {
  const size_t n = Utf8SequenceLength(s.substr(i));
  *invalid = n == 0;
  *width = n == 0 ? 1 : n;
  if (n <= 1) return n == 0 ? 0xFFFD : static_cast<unsigned char>(s[i]);
  static constexpr unsigned char kLeadMask[] = {0, 0, 0x1F, 0x0F, 0x07};
  char32_t r = static_cast<unsigned char>(s[i]) & kLeadMask[n];
  for (size_t k = 1; k < n; ++k) r = (r << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return r;
}

void AppendHex(std::string& out, const char* prefix, uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, v);
  out += buf;
}

// The runtime's printquoted: printable ASCII as is, \n \r \t \\ \" escaped,
// other runes \xNN (below DEL), \uNNNN or \UNNNNNNNN; an ill-formed byte is
// U+FFFD up to 1.26, \xNN from 1.27.
std::string RuntimeQuoted(std::string_view s, const GoVersion& version) {
  std::string out = "\"";
  for (size_t i = 0, width = 1; i < s.size(); i += width) {
    bool invalid = false;
    const char32_t r = DecodeRune(s, i, &width, &invalid);
    if (r == '\n' || r == '\r' || r == '\t') {
      out += r == '\n' ? "\\n" : r == '\r' ? "\\r" : "\\t";
    } else if (r == '\\' || r == '"') {
      out += {'\\', static_cast<char>(r)};
    } else if (invalid && AtLeast(version, 27)) {
      AppendHex(out, "\\x", static_cast<unsigned char>(s[i]), 2);
    } else if (r >= ' ' && r <= '~') {
      out += static_cast<char>(r);
    } else if (r < 127) {
      AppendHex(out, "\\x", r, 2);
    } else {
      AppendHex(out, r < 0x10000 ? "\\u" : "\\U", r, r < 0x10000 ? 4 : 8);
    }
  }
  return out + "\"";
}

// 1.27's tracebackStringNeedsQuoting: anything but [A-Za-z0-9./_].
bool NeedsQuoting(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    return !std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '/' && c != '_';
  });
}

}  // namespace

std::string GoroutineHeaderLabels(const GoVersion& version, const Labels& labels) {
  if (labels.empty()) return "";
  const bool new_form = AtLeast(version, 27);
  const auto quote = [&](const std::string& s) {
    return !new_form || NeedsQuoting(s) ? RuntimeQuoted(s, version) : s;
  };
  std::string out = new_form ? " {" : " labels:{";
  for (size_t i = 0; i < labels.size(); ++i) {
    out += (i ? ", " : "") + quote(labels[i].first) + ": " + quote(labels[i].second);
  }
  return out + "}";
}

std::string GoroutineDumpText(const GoroutineDumpInput& in, std::span<const Goroutine> goroutines) {
  StackTexts stacks(in);
  std::string out;
  for (const Goroutine& g : goroutines) {
    if (!out.empty()) out += "\n";
    // goroutineheader: the labels inside the brackets up to 1.26, after
    // them from 1.27.
    const std::string labels =
        in.traceback_labels ? GoroutineHeaderLabels(in.version, g.labels) : "";
    out += "goroutine " + std::to_string(g.goid) + " [" + GoroutineStatusText(in, g) +
           (AtLeast(in.version, 27) ? "]" + labels : labels + "]") + ":\n";
    if (g.on_cpu && (g.status & ~kGscan) == kGrunning) {
      // Its registers are on a thread; reading them would mean stopping it.
      out +=
          "\tgoroutine running on other thread; stack unavailable (goheap2pprof does not stop "
          "the target)\n";
    } else {
      out += stacks.For(g);
    }
    out += CreatedByText(in, stacks.symbols(), g);
  }
  return out;
}

}  // namespace goheap2pprof
