#include "pprof/memstats_text.h"

#include <charconv>
#include <cmath>
#include <span>
#include <string_view>
#include <system_error>

namespace goheap2pprof {
namespace {

void AppendLine(std::string& out, std::string_view name, uint64_t v) {
  out += "# ";
  out += name;
  out += " = ";
  out += std::to_string(v);
  out += '\n';
}

void Pair(std::string& out, std::string_view name, uint64_t inuse, uint64_t sys) {
  out += "# ";
  out += name;
  out += " = " + std::to_string(inuse) + " / " + std::to_string(sys) + '\n';
}

// fmt's %d of a [256]uint64: "[v0 v1 ... v255]".
void Ring(std::string& out, std::string_view name, std::span<const uint64_t> ring) {
  out += "# ";
  out += name;
  out += " = [";
  for (size_t i = 0; i < ring.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(ring[i]);
  }
  out += "]\n";
}

}  // namespace

std::string GoFormatFloat(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  // to_chars in scientific form without a precision gives the shortest
  // digits that round-trip, as strconv's shortest mode does: "d.ddde±XX".
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";  // cannot happen with 64 bytes
  std::string_view s(buf, static_cast<size_t>(end - buf));
  std::string sign;
  if (s.front() == '-') {
    sign = "-";
    s.remove_prefix(1);
  }
  const size_t e = s.find('e');
  int exp = 0;
  std::from_chars(s.data() + e + 1 + (s[e + 1] == '+'), s.data() + s.size(), exp);
  std::string digits(1, s[0]);
  if (e > 1) digits += s.substr(2, e - 2);  // after "d."
  if (x == 0) return sign + "0";
  // strconv: %e when exp < -4 || exp >= eprec, eprec being 6 when shortest.
  if (exp < -4 || exp >= 6) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const int a = exp < 0 ? -exp : exp;
    if (a < 10) out += '0';
    return out + std::to_string(a);
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const size_t int_digits = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_digits)
    return sign + digits + std::string(int_digits - digits.size(), '0');
  return sign + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

std::string MemStatsBlock(const MemStats& m, std::optional<uint64_t> max_rss) {
  std::string out = "\n# runtime.MemStats\n";
  AppendLine(out, "Alloc", m.alloc);
  AppendLine(out, "TotalAlloc", m.total_alloc);
  AppendLine(out, "Sys", m.sys);
  AppendLine(out, "Lookups", m.lookups);
  AppendLine(out, "Mallocs", m.mallocs);
  AppendLine(out, "Frees", m.frees);
  AppendLine(out, "HeapAlloc", m.heap_alloc);
  AppendLine(out, "HeapSys", m.heap_sys);
  AppendLine(out, "HeapIdle", m.heap_idle);
  AppendLine(out, "HeapInuse", m.heap_inuse);
  AppendLine(out, "HeapReleased", m.heap_released);
  AppendLine(out, "HeapObjects", m.heap_objects);
  Pair(out, "Stack", m.stack_inuse, m.stack_sys);
  Pair(out, "MSpan", m.mspan_inuse, m.mspan_sys);
  Pair(out, "MCache", m.mcache_inuse, m.mcache_sys);
  AppendLine(out, "BuckHashSys", m.buck_hash_sys);
  AppendLine(out, "GCSys", m.gc_sys);
  AppendLine(out, "OtherSys", m.other_sys);
  AppendLine(out, "NextGC", m.next_gc);
  AppendLine(out, "LastGC", m.last_gc);
  Ring(out, "PauseNs", m.pause_ns);
  Ring(out, "PauseEnd", m.pause_end);
  AppendLine(out, "NumGC", m.num_gc);
  AppendLine(out, "NumForcedGC", m.num_forced_gc);
  out += "# GCCPUFraction = " + GoFormatFloat(m.gc_cpu_fraction) + "\n";
  out += std::string("# DebugGC = ") + (m.debug_gc ? "true" : "false") + "\n";
  if (max_rss) AppendLine(out, "MaxRSS", *max_rss);
  return out;
}

}  // namespace goheap2pprof
