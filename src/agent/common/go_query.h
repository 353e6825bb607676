// Go's ways of reading a URL query and a decimal integer (net/url, strconv),
// for the agent's HTTP code: serve's routes (agent/serve/query.h) answer as a
// Go program's own net/http/pprof would, and the listener and the worker
// parse numbers the same way. Pure code: unit tested (serve_query_test.cc)
// and fuzzed (tests/fuzz/fuzz_serve_query.cc).
//
//   std::vector<std::pair<std::string, std::string>> q = ParseGoQuery("a=1&b=%20");
//   std::optional<int64_t> n = GoParseInt(FormValue(q, "a"));  // 1
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goheap2pprof {

// Go's url.ParseQuery: pairs split on '&', '+' is a space, %XX escapes; a pair
// with a ';' or a bad escape is skipped (Go records an error that
// Request.FormValue ignores). Values in order of appearance.
std::vector<std::pair<std::string, std::string>> ParseGoQuery(std::string_view query);
// Request.FormValue: the first value of key, "" if absent.
std::string FormValue(const std::vector<std::pair<std::string, std::string>>& query,
                      std::string_view key);
// Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits, nullopt on
// a syntax error or overflow.
std::optional<int64_t> GoParseInt(std::string_view s);
// `v, _ := strconv.Atoi(s)`: 0 on a syntax error, the clamped value on overflow.
int64_t GoAtoiIgnoringError(std::string_view s);
// Percent-decodes a URL path; nullopt on a bad escape.
std::optional<std::string> UnescapePath(std::string_view path);

}  // namespace goheap2pprof
