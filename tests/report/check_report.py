#!/usr/bin/env python3
"""`cm-tune report`'s page in a real browser: headless Chromium, driven over the DevTools protocol.

Usage: check_report.py check CM_TUNE SCRIPTED_WORKER OUT_DIR
       check_report.py screenshot REPORT.html OUT.png [--width W] [--height H] [--top Y] [--dark]

check (the ctest ReportBrowser.*): makes the database of tests/db_export/check_db_export.py (a real
`cm-tune tune` with the scripted measuring process: f32 nn and tn, a batch with a shared B, i32, and
one trial more per outcome), runs `cm-tune report --out`, opens the page in Chromium and checks that
  - it loads with no exception and no console or log error;
  - it requests nothing but the file itself (any request of another scheme than file:, data: or
    about: fails; host names resolve to nothing and a dead proxy stands in front of the network, so
    a leak cannot succeed either);
  - each plot's points, counted in the live page, are as many as the database implies (counted here
    with sqlite3 from the database, not from the page) and as its data-points attribute says;
  - the screenshot (a PNG decoded here with zlib) is not blank, and the page is light in light mode
    and dark in dark mode with its plots' text in the page's text colour.
The screenshot is kept in OUT_DIR/report-check.png (OUT_DIR: the build folder).

screenshot: a PNG of a report page, W x H pixels from Y pixels down (the README's docs/report.png is
one: --width 1280 --height 1500); --dark: as a browser in dark mode shows it.

Chromium is Debian's `chromium` (/usr/bin/chromium, or $CHROMIUM); scripts/test.sh installs it.
The protocol runs over --remote-debugging-pipe (file descriptors 3 and 4, messages ended by NUL): no
port, no websocket library. Exit 0: passed; 1: failed (each failure printed).
"""
import base64
import fcntl
import json
import os
import pathlib
import select
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "db_export"))

GRID = 24   # the dispatch map's M and N values (report::ReportRequest::grid_cells)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


# --- the browser ------------------------------------------------------------------------------------

def chromium_binary():
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        raise SystemExit("check_report: FAIL: Chromium is not installed (Debian's package chromium, /usr/bin/chromium; "
                         "scripts/test.sh installs it with apt-get install chromium)")
    return path


class Browser:
    """Headless Chromium and one page of it, over the DevTools protocol on a pipe."""

    def __init__(self, folder, width, height):
        # Descriptors at 10 and above, so that moving them to 3 and 4 in the child overwrites neither.
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_browser_r, from_browser_w)]
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)

        def child():
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        args = [chromium_binary(), "--headless=new", "--remote-debugging-pipe", f"--user-data-dir={folder}/profile",
                f"--window-size={width},{height}", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
                "--disable-dev-shm-usage", "--disable-extensions", "--disable-sync", "--disable-component-update",
                "--disable-background-networking", "--disable-default-apps", "--hide-scrollbars", "--mute-audio",
                # A request that leaks resolves no host and meets a dead proxy.
                "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")   # Chromium refuses to run as root with its sandbox
        self.log = open(f"{folder}/chromium.log", "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     pass_fds=(3, 4), preexec_fn=child)
        for fd in high:
            os.close(fd)
        self.out, self.inp = to_browser_w, from_browser_r
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.out, self.inp):
            os.close(fd)
        self.log.close()

    def message(self, deadline):
        """The next message from the browser, or None at the deadline."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.inp], [], [], left)[0]:
                return None
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe (exit {self.proc.poll()})")
            self.buffer += chunk
        text, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(text)

    def send(self, method, params=None, session=True, timeout=60):
        """Sends a command (to the page's session unless session=False) and returns its result."""
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            command["sessionId"] = self.session
        os.write(self.out, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self.message(deadline)
            if m is None:
                raise RuntimeError(f"no answer to {method} within {timeout} s")
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_for(self, event, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e["method"] == event:
                    return e
            m = self.message(deadline)
            if m is None:
                raise RuntimeError(f"no {event} within {timeout} s")
            if "method" in m:
                self.events.append(m)

    def open(self, url, width, height, dark=False):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.dark(dark)
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def dark(self, on):
        self.send("Emulation.setEmulatedMedia",
                  {"features": [{"name": "prefers-color-scheme", "value": "dark" if on else "light"}]})

    def evaluate(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, top=0, width=0, height=0):
        """The viewport as a PNG; or, from `top` down the page, a width x height part of it."""
        params = {"format": "png"}
        if top:
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": top, "width": width, "height": height, "scale": 1})
        return base64.b64decode(self.send("Page.captureScreenshot", params)["data"])


# --- PNG ----------------------------------------------------------------------------------------------

def png_pixels(data):
    """(width, height, channels, rows of bytes) of an 8-bit RGB or RGBA PNG, unfiltered."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "screenshot: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise RuntimeError(f"screenshot: a PNG of depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = previous[i], previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, channels, rows


def check_screenshot(png):
    width, height, channels, rows = png_pixels(png)
    colours = set()
    for line in rows[::2]:
        for x in range(0, width * channels, channels * 2):
            colours.add(bytes(line[x:x + 3]))
    background = bytes(rows[0][0:3])
    differing = sum(1 for line in rows[::4] for x in range(0, width * channels, channels * 4)
                    if bytes(line[x:x + 3]) != background)
    sampled = len(rows[::4]) * len(range(0, width * channels, channels * 4))
    check(len(colours) >= 50, f"screenshot: only {len(colours)} distinct colours: blank or nearly")
    check(differing >= sampled // 50, f"screenshot: {differing} of {sampled} sampled pixels differ from the background")
    return width, height, len(colours)


# --- what the database implies --------------------------------------------------------------------------

def expected_counts(db, problem_where):
    """Each plot's points and each table's rows, from the database (its one device) by SQL."""
    sql = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    key = "m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype"
    passing = "outcome = 'ok' AND median_ms IS NOT NULL"
    tuned = f"({key}) IN (SELECT {key} FROM winners WHERE scope = 'overall')"
    out = {}
    for (dtype,) in sql.execute("SELECT DISTINCT dtype FROM winners WHERE scope = 'overall'"):
        families = sql.execute(f"SELECT count(*) FROM (SELECT DISTINCT {key}, template_name FROM trials "
                               f"WHERE {passing} AND dtype = ? AND {tuned})", (dtype,)).fetchone()[0]
        cublas = sql.execute(f"SELECT count(*) FROM baselines WHERE dtype = ? AND median_ms > 0 AND {tuned}",
                             (dtype,)).fetchone()[0]
        out[f"speed-{dtype}"] = families + cublas
        out[f"dispatch-{dtype}"] = GRID * GRID
    out["roofline"] = sql.execute("SELECT count(*) FROM winners WHERE scope = 'overall' AND gflops > 0").fetchone()[0]
    at = f"{problem_where} AND device_id = (SELECT min(device_id) FROM winners)"
    out["landscape-trials"] = sql.execute(f"SELECT count(*) FROM trials WHERE {passing} AND {at}").fetchone()[0]
    for template, cells in sql.execute(f"SELECT template_name, count(DISTINCT tile_m || 'x' || tile_n) FROM trials "
                                       f"WHERE {passing} AND {at} GROUP BY template_name"):
        out[f"heatmap-{template}"] = cells
    out["outcomes"] = sql.execute(f"SELECT count(DISTINCT template_name || '/' || outcome) FROM trials "
                                  f"WHERE {at}").fetchone()[0]
    out["table:winners"] = sql.execute("SELECT count(*) FROM winners WHERE scope = 'overall'").fetchone()[0]
    return out


PAGE_COUNTS = """JSON.stringify({
  plots: Object.fromEntries([...document.querySelectorAll('svg[data-plot]')].map(s =>
    [s.dataset.plot, {counted: s.querySelectorAll('[data-point]').length, says: +s.dataset.points,
                      titled: !!s.querySelector('text.title') && s.querySelector('text.title').textContent.length > 0,
                      axes: s.querySelectorAll('text.axislabel').length}])),
  tables: Object.fromEntries([...document.querySelectorAll('table[data-table]')].map(t =>
    [t.dataset.table, {rows: t.querySelectorAll('tbody tr').length, says: +t.dataset.rows}])),
  resources: performance.getEntriesByType('resource').map(e => e.name)
})"""

COLOURS = """JSON.stringify({background: getComputedStyle(document.body).backgroundColor,
  text: getComputedStyle(document.body).color,
  svgText: getComputedStyle(document.querySelector('svg.plot text')).fill})"""


def luminance(css):
    parts = [float(v) for v in css[css.index("(") + 1:css.index(")")].split(",")[:3]]
    return 0.2126 * parts[0] + 0.7152 * parts[1] + 0.0722 * parts[2]


def check_events(events):
    for e in events:
        method, params = e["method"], e.get("params", {})
        if method == "Runtime.exceptionThrown":
            failures.append(f"page: exception: {params.get('exceptionDetails', {}).get('text')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            failures.append(f"page: log error: {params['entry'].get('text')} ({params['entry'].get('url', '')})")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            failures.append(f"page: console.{params['type']}: {params.get('args')}")
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:")):
                failures.append(f"page: a network request: {url}")


def run_check(cmtune, worker, out_dir):
    from check_db_export import Fixture
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cmt-report-") as folder:
        fx = Fixture(cmtune, worker, folder)
        tuned = time.monotonic()
        # The landscape of the problem whose trials ended every way (the fixture's extra rows copy its first trial).
        m, n, k, layout, batch, dtype = fx.sql("SELECT m, n, k, layout, batch, dtype FROM trials ORDER BY id LIMIT 1")[0]
        problem = f"{m}x{n}x{k}" + ("" if layout == "nn" else f":{layout}") + ("" if dtype == "f32" else f":{dtype}")
        problem += "" if batch == 1 else f"*{batch}"
        r = fx.run(["report", "--out", "report.html", "--problem", problem])
        check(r.returncode == 0, f"report: exit {r.returncode}: {r.stderr.decode()}")
        report = fx.folder / "report.html"
        if not report.exists():
            return
        where = (f"m = {m} AND n = {n} AND k = {k} AND layout = '{layout}' AND batch = {batch} AND dtype = '{dtype}' "
                 f"AND stride_a = 0 AND stride_b = 0 AND stride_c = 0")
        expected = expected_counts(fx.db, where)
        browser = Browser(folder, 1280, 1000)
        try:
            browser.open(report.as_uri(), 1280, 1000)
            page = json.loads(browser.evaluate(PAGE_COUNTS))
            png = browser.screenshot()
            light = json.loads(browser.evaluate(COLOURS))
            browser.dark(True)
            dark = json.loads(browser.evaluate(COLOURS))
            check_events(browser.events)
        finally:
            browser.close()
        opened = time.monotonic()

    plots, tables = page["plots"], page["tables"]
    for name, want in expected.items():
        if name.startswith("table:"):
            got = tables.get(name[6:], {}).get("rows")
            check(got == want, f"table {name[6:]}: {got} rows in the page, the database has {want} winners")
            continue
        got = plots.get(name, {}).get("counted")
        check(got == want, f"plot {name}: {got} points in the page, the database implies {want}")
    extra = sorted(p for p in plots if p.startswith("heatmap-") and p not in expected)
    check(not extra, f"heat maps of families with no passing trial: {extra}")
    for name, plot in plots.items():
        check(plot["counted"] == plot["says"], f"plot {name}: {plot['counted']} points, data-points says {plot['says']}")
        check(plot["titled"] and plot["axes"] == 2, f"plot {name}: no title or not two axis labels")
        if name.startswith("dispatch-rate-"):
            check(0 < plot["counted"] <= GRID * GRID, f"plot {name}: {plot['counted']} cells")
    for name, table in tables.items():
        check(table["rows"] == table["says"], f"table {name}: {table['rows']} rows, data-rows says {table['says']}")
    check(any(n.startswith("held-out-") for n in tables), "no held-out check table")
    check(all(u.startswith(("file:", "data:", "about:")) for u in page["resources"]),
          f"page: resources from elsewhere: {page['resources']}")
    check(luminance(light["background"]) > 200 and luminance(light["text"]) < 80,
          f"light mode: background {light['background']}, text {light['text']}")
    check(luminance(dark["background"]) < 60 and luminance(dark["text"]) > 180,
          f"dark mode: background {dark['background']}, text {dark['text']}")
    check(dark["svgText"] == dark["text"] and light["svgText"] == light["text"],
          f"plot text is not the page's text colour: light {light}, dark {dark}")
    shot = pathlib.Path(out_dir) / "report-check.png"
    shot.write_bytes(png)
    width, height, colours = check_screenshot(png)
    print(f"check_report: {len(plots)} plots, {sum(p['counted'] for p in plots.values())} points; screenshot {shot} "
          f"({width}x{height}, {colours} colours); tune {tuned - start:.1f} s, report and browser {opened - tuned:.1f} s")


def run_screenshot(report, out, width, height, dark, top):
    with tempfile.TemporaryDirectory(prefix="cmt-report-shot-") as folder:
        browser = Browser(folder, width, height)
        try:
            browser.open(pathlib.Path(report).resolve().as_uri(), width, height, dark)
            pathlib.Path(out).write_bytes(browser.screenshot(top, width, height))
            check_events(browser.events)
        finally:
            browser.close()


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "check":
        run_check(*args[1:])
    elif len(args) >= 3 and args[0] == "screenshot":
        options = dict(width=1280, height=1500, dark=False, top=0)
        rest = args[3:]
        while rest:
            flag = rest.pop(0)
            if flag == "--dark":
                options["dark"] = True
            elif flag in ("--width", "--height", "--top") and rest:
                options[flag[2:]] = int(rest.pop(0))
            else:
                print(__doc__)
                return 2
        run_screenshot(args[1], args[2], **options)
    else:
        print(__doc__)
        return 2
    for f in failures:
        print(f"check_report: FAIL: {f}")
    print(f"check_report {args[0]}: {'passed' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
