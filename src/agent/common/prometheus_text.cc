#include "agent/common/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "base/utf8.h"

namespace goheap2pprof {

std::string PrometheusFloat(double v) {
  if (v == 0) return "0";
  if (v == 1) return "1";
  if (v == -1) return "-1";
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest round-trip digits, as "d.ddde±XX" (two exponent digits at
  // least, as Go writes them).
  char buf[64];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  if (exp < -4 || exp >= 6) return sci;
  const bool negative = sci[0] == '-';
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c >= '0' && c <= '9') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exp < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (digits.size() <= static_cast<size_t>(exp) + 1) {
    out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
           digits.substr(static_cast<size_t>(exp) + 1);
  }
  return out;
}

namespace {

// Label values escape the double quote that ends them, HELP texts do not.
std::string Escaped(std::string_view text, bool quote) {
  std::string out;
  for (char c : ValidUtf8(text)) {
    if (c == '\\' || (quote && c == '"')) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string PrometheusLabelValue(std::string_view value) { return Escaped(value, true); }

void PrometheusFamily(std::string& out, std::string_view name, std::string_view type,
                      std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(Escaped(help, false)).append("\n# TYPE ");
  out.append(name).append(" ").append(type).append("\n");
}

void PrometheusWriter::Family(const MetricFamily& family) {
  families_.push_back({std::string(family.name), {}});
  PrometheusFamily(families_.back().text, family.name, family.type, family.help);
}

void PrometheusWriter::Sample(std::string_view suffix, MetricLabels labels, MetricValue v) {
  Written& f = families_.back();
  f.text.append(f.name).append(suffix);
  const char* sep = "{";
  for (const MetricLabel& l : labels) {
    f.text.append(sep).append(l.name).append("=\"").append(PrometheusLabelValue(l.value));
    f.text += '"';
    sep = ",";
  }
  if (labels.size() != 0) f.text += '}';
  f.text.append(" ").append(v.text()).append("\n");
}

std::string PrometheusWriter::Text() && {
  std::string out;
  for (const Written& f : families_) out += f.text;
  return out;
}

std::string PrometheusWriter::SortedText() && {
  std::stable_sort(families_.begin(), families_.end(),
                   [](const Written& a, const Written& b) { return a.name < b.name; });
  return std::move(*this).Text();
}

}  // namespace goheap2pprof
