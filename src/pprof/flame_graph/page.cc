// The page of a flame graph: its HTML skeleton, style and script, and the
// graph as JSON data the script draws (pprof/flame_graph/flame_graph.h). Written for
// this project; the script uses no library.
//
// Why HTML with an inline SVG, not a bare SVG file: an HTML page has a real
// search field and a place for notes and links, its escaping rules for text
// and attributes are the familiar ones, and a <script type=
// "application/json"> holds the data compactly (names once, frames as
// numbers) for the script to draw, where an SVG file would carry one
// element per frame in XML whose CDATA script cannot contain "]]>".
#include <openssl/evp.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "base/utf8.h"
#include "pprof/flame_graph/flame_graph.h"

namespace goheap2pprof {

namespace {

constexpr const char* kStyle = R"css(
body { font: 13px sans-serif; margin: 8px 10px; color: #222; background: #fff; }
h1 { font-size: 16px; margin: 0 0 4px; overflow-wrap: anywhere; }
#summary, #types, #notes { margin: 2px 0; }
#controls { margin: 6px 0; }
#search { width: 24em; }
#matched { margin-left: 8px; font-weight: bold; }
#flame { display: block; cursor: pointer; }
#flame text { font: 12px monospace; fill: #000; pointer-events: none; }
#flame .anc rect { fill-opacity: 0.45; }
#flame .match rect { fill: #d43fd4; }
#details { font: 12px monospace; min-height: 3.2em; white-space: pre-wrap; overflow-wrap: anywhere; }
)css";

// Draws the frames of the zoomed frame's subtree that are at least
// kMinPixels wide, and its ancestors full width (dimmed). The state (zoom,
// search) lives in the URL fragment, #zoom=<frame>&search=<text>, so a view
// can be shared and opened directly.
constexpr const char* kScript = R"js(
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var FIELDS = 6, FRAME_HEIGHT = 18, MIN_PIXELS = 0.5, INLINED = 1, MERGED = 2;
  var data = JSON.parse(document.getElementById('flame-data').textContent);
  var n = data.frames.length / FIELDS;
  var depth = [], x = [], value = [], name = [], loc = [], flags = [];
  var parent = [], end = [], self = [];
  var svg = document.getElementById('flame');
  var details = document.getElementById('details');
  var search = document.getElementById('search');
  var matched = document.getElementById('matched');
  var state = { zoom: 0, search: '' };
  var charWidth = 7.2;

  function index() {
    var stack = [], i;
    for (i = 0; i < n; i++) {
      var f = data.frames.slice(i * FIELDS, i * FIELDS + FIELDS);
      depth[i] = f[0]; x[i] = f[1]; value[i] = f[2];
      name[i] = data.names[f[3]]; loc[i] = data.locations[f[4]]; flags[i] = f[5];
      self[i] = value[i];
      while (stack.length && depth[stack[stack.length - 1]] >= depth[i]) end[stack.pop()] = i;
      parent[i] = stack.length ? stack[stack.length - 1] : -1;
      if (parent[i] >= 0) self[parent[i]] -= value[i];
      stack.push(i);
    }
    while (stack.length) end[stack.pop()] = n;
  }

  function formatValue(v) {
    if (data.unit !== 'bytes') return String(v);
    var units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'], u = 0;
    while (u + 1 < units.length && Math.abs(v) >= Math.pow(1024, u + 1)) u++;
    var s = (v / Math.pow(1024, u)).toFixed(2).replace(/\.?0+$/, '');
    return s + units[u];
  }

  function percent(v, total) {
    return total > 0 ? (100 * v / total).toFixed(2) + '%' : '-';
  }

  function describe(i) {
    var lines = [name[i] + (flags[i] & INLINED ? ' (inlined)' : '')];
    if (loc[i]) lines.push(loc[i]);
    var text = formatValue(value[i]) + ', ' + percent(value[i], data.total) + ' of the total';
    if (state.zoom !== 0 && isInside(i, state.zoom)) {
      text += ', ' + percent(value[i], value[state.zoom]) + ' of the zoomed frame';
    }
    if (!(flags[i] & MERGED)) text += '; self ' + formatValue(self[i]);
    lines.push(text);
    return lines.join('\n');
  }

  function isInside(i, root) { return i >= root && i < end[root]; }

  function color(i) {
    if (flags[i] & MERGED) return 'hsl(0,0%,78%)';
    var h = 0, s = name[i];
    for (var k = 0; k < s.length; k++) h = (h * 31 + s.charCodeAt(k)) >>> 0;
    var hue = s.indexOf('runtime.') === 0 ? 200 + h % 20 : h % 55;
    return 'hsl(' + hue + ',' + (70 + (h >>> 8) % 20) + '%,' + (58 + (h >>> 16) % 10) + '%)';
  }

  function fit(text, pixels) {
    var chars = Math.floor((pixels - 6) / charWidth);
    if (chars < 3) return '';
    return text.length <= chars ? text : text.slice(0, chars - 2) + '..';
  }

  function frameElement(i, left, width, ancestor) {
    var g = document.createElementNS(NS, 'g');
    g.setAttribute('class', 'f' + (ancestor ? ' anc' : ''));
    g.setAttribute('data-id', String(i));
    var title = document.createElementNS(NS, 'title');
    title.textContent = describe(i);
    g.appendChild(title);
    var rect = document.createElementNS(NS, 'rect');
    rect.setAttribute('x', String(left));
    rect.setAttribute('y', String(depth[i] * FRAME_HEIGHT));
    rect.setAttribute('width', String(width));
    rect.setAttribute('height', String(FRAME_HEIGHT - 1));
    rect.setAttribute('fill', color(i));
    g.appendChild(rect);
    var label = fit(name[i], width);
    if (label) {
      var text = document.createElementNS(NS, 'text');
      text.setAttribute('x', String(left + 3));
      text.setAttribute('y', String(depth[i] * FRAME_HEIGHT + FRAME_HEIGHT - 5));
      text.textContent = label;
      g.appendChild(text);
    }
    return g;
  }

  function graphWidth() {
    return Math.max(300, document.documentElement.clientWidth - 20);
  }

  function render() {
    var W = graphWidth(), z = state.zoom, maxDepth = depth[z], a, i;
    var fragment = document.createDocumentFragment();
    for (a = z; a >= 0; a = parent[a]) fragment.appendChild(frameElement(a, 0, W, a !== z));
    var scale = value[z] > 0 ? W / value[z] : 0;
    for (i = z + 1; i < end[z];) {
      var width = value[i] * scale;
      if (width < MIN_PIXELS) { i = end[i]; continue; }
      fragment.appendChild(frameElement(i, (x[i] - x[z]) * scale, width, false));
      if (depth[i] > maxDepth) maxDepth = depth[i];
      i++;
    }
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svg.setAttribute('width', String(W));
    svg.setAttribute('height', String((maxDepth + 1) * FRAME_HEIGHT));
    svg.appendChild(fragment);
    highlight();
    document.body.setAttribute('data-zoom', String(z));
  }

  function matcher() {
    if (!state.search) return null;
    // Boundary: compiling is the only check of the user's pattern; one that
    // does not compile is searched for as plain text.
    try {
      return new RegExp(state.search);
    } catch (e) {
      return new RegExp(state.search.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    }
  }

  // Highlights matching frames and sums the widest matches (a match inside
  // a match counts once) over the whole profile.
  function highlight() {
    var re = matcher(), sum = 0, i;
    var frames = svg.querySelectorAll('g.f');
    for (i = 0; i < frames.length; i++) {
      var id = Number(frames[i].getAttribute('data-id'));
      frames[i].classList.toggle('match', !!re && id !== 0 && re.test(name[id]));
    }
    if (!re) {
      matched.textContent = '';
      matched.removeAttribute('data-value');
      return;
    }
    for (i = 1; i < n;) {
      if (re.test(name[i])) { sum += value[i]; i = end[i]; } else { i++; }
    }
    matched.setAttribute('data-value', String(sum));
    matched.textContent = 'matched: ' + formatValue(sum) + ' (' + percent(sum, data.total) + ')';
  }

  function saveState() {
    var h = '#zoom=' + state.zoom;
    if (state.search) h += '&search=' + encodeURIComponent(state.search);
    if (location.hash !== h) history.replaceState(null, '', h);
  }

  function loadState() {
    var parts = location.hash.replace(/^#/, '').split('&');
    state.zoom = 0;
    state.search = '';
    for (var k = 0; k < parts.length; k++) {
      var eq = parts[k].indexOf('='), key = parts[k].slice(0, eq), v = parts[k].slice(eq + 1);
      if (eq < 0) continue;
      // Boundary: a hand-edited hash with a bad %-escape is skipped.
      try { v = decodeURIComponent(v); } catch (e) { continue; }
      if (key === 'zoom' && /^[0-9]+$/.test(v) && Number(v) < n) state.zoom = Number(v);
      if (key === 'search') state.search = v;
    }
    search.value = state.search;
  }

  function zoom(i) {
    state.zoom = i;
    saveState();
    render();
  }

  function frameOf(target) {
    var g = target && target.closest ? target.closest('g.f') : null;
    return g ? Number(g.getAttribute('data-id')) : -1;
  }

  function summary() {
    var s = data.type + ': total ' + formatValue(data.total) + ' in ' + n + ' frames.';
    document.getElementById('summary').textContent = s;
    var notes = [];
    if (data.merged > 0) {
      notes.push(data.merged + ' frames narrower than ' + formatValue(data.threshold) +
                 ' were merged into "[N smaller frames]" frames.');
    }
    if (data.skipped > 0) notes.push(data.skipped + ' samples with a negative value are left out.');
    if (data.truncated > 0) notes.push(data.truncated + ' stacks were cut at 1024 frames.');
    document.getElementById('notes').textContent = notes.join(' ');
  }

  function measureCharWidth() {
    var probe = document.createElementNS(NS, 'text');
    probe.textContent = 'mmmmmmmmmm';
    svg.appendChild(probe);
    var w = probe.getComputedTextLength();
    svg.removeChild(probe);
    if (w > 0) charWidth = w / 10;
  }

  index();
  summary();
  measureCharWidth();
  loadState();
  svg.addEventListener('click', function (e) {
    var i = frameOf(e.target);
    if (i >= 0) zoom(i);
  });
  svg.addEventListener('mouseover', function (e) {
    var i = frameOf(e.target);
    if (i >= 0) details.textContent = describe(i);
  });
  search.addEventListener('input', function () {
    state.search = search.value;
    saveState();
    highlight();
  });
  document.getElementById('reset').addEventListener('click', function () { zoom(0); });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Escape') zoom(0);
  });
  window.addEventListener('hashchange', function () { loadState(); render(); });
  window.addEventListener('resize', render);
  render();
  document.body.setAttribute('data-rendered', 'true');
})();
)js";

std::string HashSource(const char* text) { return "'" + CspSha256Source(text) + "'"; }

// Unreserved characters (RFC 3986) stay, the rest is %XX.
std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// The graph as the script reads it: strings in tables, frames as numbers.
nlohmann::json GraphJson(const FlameGraph& graph) {
  nlohmann::json names = nlohmann::json::array(), locations = nlohmann::json::array();
  nlohmann::json frames = nlohmann::json::array();
  std::map<std::string, size_t> name_ids, location_ids;
  auto intern = [](std::map<std::string, size_t>& ids, nlohmann::json& table,
                   const std::string& s) {
    auto [it, inserted] = ids.try_emplace(s, ids.size());
    if (inserted) table.push_back(s);
    return it->second;
  };
  int64_t threshold = 0;
  for (const FlameFrame& f : graph.frames) {
    frames.push_back(f.depth);
    frames.push_back(f.x);
    frames.push_back(f.value);
    frames.push_back(intern(name_ids, names, f.name));
    frames.push_back(intern(location_ids, locations, f.location));
    frames.push_back((f.inlined ? 1 : 0) | (f.merged > 0 ? 2 : 0));
    if (f.merged == 0 && f.depth > 0 && (threshold == 0 || f.value < threshold)) {
      threshold = f.value;
    }
  }
  return {{"title", graph.title},
          {"type", graph.sample_type},
          {"unit", graph.unit},
          {"total", graph.total},
          {"names", names},
          {"locations", locations},
          {"frames", frames},
          {"merged", graph.merged_frames},
          {"threshold", threshold},
          {"skipped", graph.skipped_samples},
          {"truncated", graph.truncated_stacks}};
}

std::string TypeLinks(const FlameGraph& graph) {
  std::string html = "<p id=\"types\">sample type:";
  for (const std::string& t : graph.types) {
    if (t == graph.sample_type) {
      html += " <b>" + EscapeHtml(ValidUtf8(t)) + "</b>";
    } else {
      html += " <a href=\"?sample_index=" + EscapeHtml(PercentEncode(t)) + "\">" +
              EscapeHtml(ValidUtf8(t)) + "</a>";
    }
  }
  return html + "</p>\n";
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string JsonForScriptElement(const std::string& json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (char c : json_text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string CspSha256Source(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorKind::kInternal, "OpenSSL's SHA-256 failed");
  }
  std::string base64(4 * ((size + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(base64.data()), digest,
                                static_cast<int>(size));
  base64.resize(static_cast<size_t>(n));
  return "sha256-" + base64;
}

std::string FlameGraphContentSecurityPolicy() {
  return "default-src 'none'; script-src " + HashSource(kScript) + "; style-src " +
         HashSource(kStyle) + "; base-uri 'none'; form-action 'none'";
}

std::string FlameGraphPage(const FlameGraph& graph, const FlameGraphOptions& options) {
  const std::string title = EscapeHtml(ValidUtf8(graph.title));
  // '<', '>' and '&' occur in JSON text only inside strings, where their
  // \u escapes mean the same.
  const std::string json = JsonForScriptElement(JsonText(GraphJson(graph)));
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
          EscapeHtml(FlameGraphContentSecurityPolicy()) + "\">\n";
  html += "<title>" + title + "</title>\n<style>" + std::string(kStyle) + "</style>\n";
  html += "</head><body>\n<h1>" + title + "</h1>\n<p id=\"summary\"></p>\n";
  if (options.sample_type_links) html += TypeLinks(graph);
  html +=
      "<p id=\"notes\"></p>\n<div id=\"controls\"><input id=\"search\" type=\"search\" "
      "placeholder=\"search functions (regular expression)\" aria-label=\"search\"> "
      "<button id=\"reset\" type=\"button\">reset zoom</button><span id=\"matched\">"
      "</span></div>\n<noscript>This flame graph is drawn by the page's own script: "
      "allow JavaScript to see it.</noscript>\n";
  html +=
      "<svg id=\"flame\" xmlns=\"http://www.w3.org/2000/svg\" width=\"0\" height=\"0\">"
      "</svg>\n<p id=\"details\">Hover over a frame for its function, file:line and "
      "value; click to zoom; Escape or the root to zoom out.</p>\n";
  html += "<script type=\"application/json\" id=\"flame-data\">" + json + "</script>\n";
  html += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return html;
}

}  // namespace goheap2pprof
