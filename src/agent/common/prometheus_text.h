// The Prometheus text exposition format (0.0.4) as every /metrics of the
// agent writes it: serve's and push's own health (agent/common/metrics.h,
// agent/push/metrics.h) and a process's Go runtime metrics
// (agent/serve/go_metrics_text.h). Debian has no C++ client library and the
// format is small; the tests check it with Prometheus's own parser
// (promtool).
//
//   PrometheusFamily(out, "x_total", "counter", "Things done.");
//   out += "x_total{kind=\"" + PrometheusLabelValue(kind) + "\"} " + PrometheusFloat(n) + "\n";
#pragma once

#include <string>
#include <string_view>

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

// A family's "# HELP" and "# TYPE" lines, appended to out. help is our own
// text: it is not escaped.
void PrometheusFamily(std::string& out, std::string_view name, std::string_view type,
                      std::string_view help);

}  // namespace goheap2pprof
