#!/usr/bin/env python3
"""Drives headless Chromium over the DevTools protocol (--remote-debugging-pipe:
JSON messages ending in a NUL byte, on descriptors 3 and 4) to check a flame
graph page the way a user sees it: it loads with no console message, error or
dialog; the top frames are as wide as their values say, within a pixel;
clicking a frame zooms to it; the search field highlights matches and shows
their share; a URL fragment restores zoom and search.

  flamegraph_browser.py CHROMIUM check PAGE_URL [--search TEXT]
  flamegraph_browser.py CHROMIUM hostile PAGE_URL NAME...
  flamegraph_browser.py CHROMIUM screenshot PAGE_URL OUT.png [--search TEXT]

Prints one "ok: ..." line per check; exits 1 with "FAIL: ..." on the first
failure. Every wait is bounded.
"""
import base64
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

WIDTH, HEIGHT = 1200, 800


class Fail(Exception):
    pass


class Browser:
    def __init__(self, chromium):
        self.profile_dir = tempfile.mkdtemp(prefix="flamegraph-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def wire():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
             "--no-first-run", "--user-data-dir=" + self.profile_dir,
             "--window-size=%d,%d" % (WIDTH, HEIGHT), "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4, to_chrome_r, from_chrome_w), preexec_fn=wire)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})

    def close(self):
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            shutil.rmtree(self.profile_dir, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail("Chromium did not answer within the time limit")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise Fail("Chromium closed its DevTools pipe")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Fail("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e["method"] == method:
                    self.events.remove(e)
                    return e
            self.events.append(self._read_message(deadline))

    def eval(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise Fail("evaluating %r: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def load(self, url, drawn=True):
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        if not drawn:
            return
        deadline = time.monotonic() + 20
        while self.eval("document.body && document.body.getAttribute('data-rendered')") != "true":
            if time.monotonic() > deadline:
                raise Fail("the page never finished drawing (body data-rendered): %s" %
                           "; ".join(self.problems()))
            time.sleep(0.1)

    def problems(self):
        """Console messages, exceptions, log entries (CSP violations) and dialogs so far."""
        self.call("Runtime.evaluate", {"expression": "0"})  # flushes pending events
        found = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled":
                found.append("console.%s: %s" % (p["type"], [a.get("value") for a in p["args"]]))
            elif m == "Runtime.exceptionThrown":
                found.append("exception: %s" % p["exceptionDetails"])
            elif m == "Log.entryAdded":
                found.append("log %s: %s" % (p["entry"]["level"], p["entry"]["text"]))
            elif m == "Page.javascriptDialogOpening":
                found.append("dialog: %s" % p.get("message"))
        return found

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})


DATA = "JSON.parse(document.getElementById('flame-data').textContent)"
# Every drawn frame: id, depth, value and the box the browser laid out.
DRAWN = """(() => {
  const d = %s, out = [];
  for (const g of document.querySelectorAll('#flame g.f')) {
    const id = Number(g.getAttribute('data-id')), r = g.querySelector('rect').getBoundingClientRect();
    out.push({id, depth: d.frames[id * 6], value: d.frames[id * 6 + 2], name: d.names[d.frames[id * 6 + 3]],
              left: r.left, width: r.width, top: r.top, height: r.height,
              match: g.classList.contains('match'), anc: g.classList.contains('anc')});
  }
  return out;
})()""" % DATA


def ok(text):
    print("ok: " + text, flush=True)


def check_proportional(frames, root, label):
    """Frames one level below root span their values' share of root's width."""
    kids = [f for f in frames if f["depth"] == root["depth"] + 1 and not f["anc"]]
    if not kids:
        raise Fail("%s: no frames below %s" % (label, root["name"]))
    worst = 0.0
    for f in kids:
        want = f["value"] / root["value"] * root["width"]
        worst = max(worst, abs(f["width"] - want))
        if abs(f["width"] - want) > 1.0:
            raise Fail("%s: %s is %.2f px wide, its value says %.2f" %
                       (label, f["name"], f["width"], want))
    ok("%s: %d frames below %s within %.3f px of their share of %.0f px" %
       (label, len(kids), root["name"], worst, root["width"]))
    return kids


def expected_match(data, pattern):
    """The widest matches' total (a match inside a match counts once)."""
    frames, names = data["frames"], data["names"]
    n = len(frames) // 6
    total, i = 0, 1
    while i < n:
        if re.search(pattern, names[frames[i * 6 + 3]]):
            total += frames[i * 6 + 2]
            d = frames[i * 6]
            i += 1
            while i < n and frames[i * 6] > d:
                i += 1
        else:
            i += 1
    return total


def check_no_problems(b, label):
    found = b.problems()
    if found:
        raise Fail("%s: %s" % (label, "; ".join(found)))
    ok("%s: no console message, exception, log entry or dialog" % label)


def check(b, url, search):
    b.load(url)
    check_no_problems(b, "load")
    frames = b.eval(DRAWN)
    data = b.eval(DATA)
    root = next(f for f in frames if f["id"] == 0)
    if abs(root["width"] - (WIDTH - 20 - 20)) > 1 and root["width"] < 300:
        raise Fail("the root is %.1f px wide" % root["width"])
    if root["value"] != data["total"] or data["total"] <= 0:
        raise Fail("root value %s, total %s" % (root["value"], data["total"]))
    kids = check_proportional(frames, root, "top frames")
    # Zoom: click the frame with the most frames right below it (the widest
    # of those), narrower than the root.
    def below(f):
        return sum(1 for g in frames if g["depth"] == f["depth"] + 1 and
                   f["left"] - 0.01 <= g["left"] and g["left"] + g["width"] <= f["left"] + f["width"] + 0.01)
    candidates = [f for f in frames if f["id"] != 0 and f["width"] < root["width"] - 2 and below(f) > 0]
    target = min(candidates, key=lambda f: (-below(f), -f["value"], f["id"])) if candidates else None
    if target is None:
        raise Fail("no frame narrower than the root to zoom into")
    b.click(target["left"] + min(target["width"] / 2, 20), target["top"] + target["height"] / 2)
    if b.eval("document.body.getAttribute('data-zoom')") != str(target["id"]):
        raise Fail("clicking %s did not zoom to it" % target["name"])
    zoomed = b.eval(DRAWN)
    z = next(f for f in zoomed if f["id"] == target["id"])
    if abs(z["width"] - root["width"]) > 1:
        raise Fail("the zoomed frame is %.1f px wide, not the graph's %.1f" %
                   (z["width"], root["width"]))
    if any(f["id"] not in (0, target["id"]) and f["depth"] <= target["depth"] and not f["anc"]
           for f in zoomed):
        raise Fail("frames beside the zoomed one are still drawn")
    check_proportional(zoomed, z, "after clicking %s" % target["name"])
    if ("zoom=%d" % target["id"]) not in b.eval("location.hash"):
        raise Fail("the URL fragment does not record the zoom: %s" % b.eval("location.hash"))
    ok("clicking %s zoomed to it (fragment %s)" % (target["name"], b.eval("location.hash")))
    # Search: type into the field.
    b.eval("document.getElementById('search').focus()")
    b.call("Input.insertText", {"text": search})
    check_search(b, data, search, "typed search")
    # The fragment alone restores zoom and search, on a fresh load.
    b.eval("document.getElementById('reset').click()")
    if b.eval("document.body.getAttribute('data-zoom')") != "0":
        raise Fail("reset zoom did not zoom out")
    base = url.split("#")[0]
    b.load("about:blank", drawn=False)
    b.load("%s#zoom=%d&search=%s" % (base, target["id"], urllib.parse.quote(search, safe="")))
    if b.eval("document.body.getAttribute('data-zoom')") != str(target["id"]):
        raise Fail("#zoom=%d did not zoom" % target["id"])
    check_search(b, data, search, "search from the fragment")
    check_no_problems(b, "after zoom and search")


def check_search(b, data, search, label):
    want = expected_match(data, search)
    got = b.eval("document.getElementById('matched').getAttribute('data-value')")
    if got is None or float(got) != want or want <= 0:
        raise Fail("%s %r: matched %s, expected %s" % (label, search, got, want))
    frames = b.eval(DRAWN)
    wrong = [f["name"] for f in frames
             if f["id"] != 0 and f["match"] != bool(re.search(search, f["name"]))]
    if wrong:
        raise Fail("%s %r: highlighting wrong on %s" % (label, search, wrong[:3]))
    text = b.eval("document.getElementById('matched').textContent")
    ok("%s %r: %d frames highlighted, %s (%.2f%% of %d)" %
       (label, search, sum(f["match"] for f in frames), text, 100 * want / data["total"],
        data["total"]))


def hostile(b, url, names):
    b.load(url)
    check_no_problems(b, "hostile page")
    scripts = b.eval("document.scripts.length")
    if scripts != 2:
        raise Fail("the hostile page has %s script elements, not 2" % scripts)
    titles = b.eval("[...document.querySelectorAll('#flame title')].map(t => t.textContent)")
    for name in names:
        if not any(t.startswith(name + "\n") or t.startswith(name + " (inlined)")
                   for t in titles):
            raise Fail("no frame shows the name %r verbatim" % name)
    if b.eval("document.title") != b.eval("document.querySelector('h1').textContent"):
        raise Fail("title and heading differ")
    ok("%d hostile names drawn verbatim as text; 2 scripts; title %r" %
       (len(names), b.eval("document.title")))


def screenshot(b, url, out, search):
    b.load(url + ("#search=" + urllib.parse.quote(search, safe="") if search else ""))
    height = b.eval("Math.ceil(document.getElementById('details').getBoundingClientRect().bottom) + 10")
    shot = b.call("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": WIDTH, "height": min(height, 4000), "scale": 1}})
    with open(out, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    ok("wrote %s (%dx%d)" % (out, WIDTH, min(height, 4000)))


def main():
    chromium, mode, url = sys.argv[1:4]
    rest = sys.argv[4:]
    search = "main\\."
    if "--search" in rest:
        i = rest.index("--search")
        search = rest[i + 1]
        del rest[i:i + 2]
    b = Browser(chromium)
    try:
        if mode == "check":
            check(b, url, search)
        elif mode == "hostile":
            hostile(b, url, rest)
        elif mode == "screenshot":
            screenshot(b, url, rest[0], search if "--search" in sys.argv else "")
        else:
            raise Fail("unknown mode " + mode)
    except Fail as e:
        print("FAIL: %s" % e, flush=True)
        return 1
    finally:
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
