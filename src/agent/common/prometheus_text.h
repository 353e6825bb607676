// The Prometheus text exposition format (0.0.4) as every /metrics of the
// agent writes it: serve's and push's own health (agent/worker/capture_metrics.h,
// agent/push/metrics.h), the agent's pool (agent/node/agent.h) and a
// process's Go runtime metrics (agent/serve/go_metrics_text.h), each
// through one PrometheusWriter over a table of its families. Debian has no
// C++ client library and the format is small; the tests check it with
// Prometheus's own parser (promtool).
//
//   constexpr MetricFamily kThings{"x_total", "counter", "Things done, by kind."};
//   PrometheusWriter w;
//   w.Family(kThings);
//   w.Sample({{"kind", kind}}, n);  // x_total{kind="..."} n
//   std::string text = std::move(w).Text();
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace goheap2pprof {

// A sample value as Prometheus's Go writer (expfmt) writes it: "0", "1",
// "+Inf", "-Inf", "NaN", otherwise strconv.FormatFloat(v, 'g', -1, 64):
// the shortest digits that round-trip, in e-form when the decimal exponent
// is below -4 or at least 6 ("1.234567e+06", "0.0001", "123456").
std::string PrometheusFloat(double v);

// A label value as the text format writes it between quotes: valid UTF-8
// (base/utf8.h), with backslash, double quote and newline escaped. Every
// value goes through it, so a value that ever comes from a target (or a
// configured name) cannot end the quoted string and forge a series.
std::string PrometheusLabelValue(std::string_view value);

// A family's "# HELP" and "# TYPE" lines, appended to out; help is escaped
// as the format wants (backslash and newline).
void PrometheusFamily(std::string& out, std::string_view name, std::string_view type,
                      std::string_view help);

// One row of a table of metric families.
struct MetricFamily {
  std::string_view name;
  std::string_view type;  // counter, gauge, histogram or summary
  std::string_view help;
};

// A label of a sample: its name (ours) and value (escaped when written).
struct MetricLabel {
  std::string_view name;
  std::string_view value;
};
using MetricLabels = std::initializer_list<MetricLabel>;

// A sample's value: an integer written in full, as our counters always
// are, or a double written by PrometheusFloat.
class MetricValue {
 public:
  template <std::integral T>
  MetricValue(T v) : text_(std::to_string(v)) {}        // NOLINT: implicit by design
  MetricValue(double v) : text_(PrometheusFloat(v)) {}  // NOLINT: implicit by design
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Writes an exposition: each family's # HELP and # TYPE lines once, then the
// samples given for it.
class PrometheusWriter {
 public:
  // Starts a family; the samples that follow are its.
  void Family(const MetricFamily& family);
  // name{labels} value, name the family's (with suffix: _bucket, _sum...).
  void Sample(MetricValue v) { Sample("", {}, v); }
  void Sample(MetricLabels labels, MetricValue v) { Sample("", labels, v); }
  void Sample(std::string_view suffix, MetricLabels labels, MetricValue v);

  // The families in the order they were started.
  std::string Text() &&;
  // The families sorted by name (stable), as client_golang's Gather writes them.
  std::string SortedText() &&;

 private:
  struct Written {
    std::string name;
    std::string text;
  };
  std::vector<Written> families_;
};

}  // namespace goheap2pprof
