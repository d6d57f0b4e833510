#!/usr/bin/env python3
"""The web pages (Sources/WebApp/Static) in headless Chromium, driven by Selenium, against the
real servers, which serve the pages on the same port as their services.

  browser_peer.py --bin DIR [--screenshots DIR] [--only 0,1,2,3] [--web-root DIR]

DIR holds the built executables (swiftkart-server, orders-server, orders, chat), e.g.
.build/debug, with the pages beside them (PitlaneServices_WebApp.resources, copied by the build) or
from --web-root. Starts both servers on port 0 with temporary databases (swiftkart-server at
--speed 10, so a short race ends within the run), and checks:

  0  both servers serve the pages, with types a browser accepts (module scripts need a
     JavaScript type)
  1  races.html: the shortest race's karts move between two reads (locations at 10 Hz over
     the server-streaming WatchRace), the leaderboard has a row per kart, the map is drawn,
     and the page says "finished" when the race is over
  2  orders.html: an update published with the `orders` CLI shows up within 1 s; across an
     orders-server restart (SIGTERM, then the same port and database) the page says
     "retrying", resumes from its last update id, and ends with every update exactly once,
     in order, as GetOrder's snapshot has them; a position the log no longer keeps
     (OUT_OF_RANGE) makes it start over from GetOrder; opened without an order, the page
     offers the orders its token may watch
  3  chat.html: two pages (WebSocket) and the `chat` CLI (gRPC) in one room see every message,
     in the same order; each page marks its own messages

Prints "ok NAME" or "FAIL NAME: why" per check, indented observations, and a closing
"checks: N ok, M failed"; exits non-zero on any failure. Every wait is bounded, each part and
the whole run have wall-clock limits, and every process started here is stopped at the end.
Chromium is Debian's (/usr/bin/chromium, /usr/bin/chromedriver): nothing is downloaded.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import quote

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ["SE_OFFLINE"] = "true"  # Selenium Manager, should anything call it, stays offline
import httpx  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

import processes  # noqa: E402
from peer_checks import describe_delivery, exit_now  # noqa: E402
from processes import Child, start_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


# ---------------------------------------------------------------------------------------------
# Results


class Report:
    """Named results, printed as they come, with observations indented under them."""

    def __init__(self):
        self.results = []

    def check(self, name, condition, why, *observations):
        self.results.append((name, None if condition else why))
        print(f"ok {name}" if condition else f"FAIL {name}: {why}", flush=True)
        for line in observations:
            print(f"    {line}", flush=True)

    def finish(self):
        failed = sum(why is not None for _, why in self.results)
        print(f"checks: {len(self.results) - failed} ok, {failed} failed", flush=True)
        return 1 if failed else 0


def note(text):
    print(f"    {text}", flush=True)


def wait_until(probe, timeout, interval=0.05):
    """probe()'s first truthy value within `timeout` seconds, else None."""
    end = time.monotonic() + timeout
    while True:
        value = probe()
        if value or time.monotonic() >= end:
            return value or None
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------
# The world: servers and a browser


class World:
    def __init__(self, bin_dir, web_root):
        self.bin = bin_dir
        self.web = ["--web-root", web_root] if web_root else []
        self.tmp = tempfile.mkdtemp(prefix="pitlane-browser-")
        self.orders_db = os.path.join(self.tmp, "orders.sqlite")
        self.kart, self.kart_port = start_server([self.exe("swiftkart-server"), "--port", "0", "--speed", "10", *self.web,
                                                  "--database", os.path.join(self.tmp, "swiftkart.sqlite")], "swiftkart-server")
        self.orders, self.orders_port = self.start_orders(0)

    def exe(self, name):
        return os.path.join(self.bin, name)

    def start_orders(self, port):
        # The same port again right after a stop may still be taken for a moment.
        end = time.monotonic() + 15
        while True:
            try:
                return start_server([self.exe("orders-server"), "--port", str(port), "--database", self.orders_db, *self.web],
                                    "orders-server")
            except RuntimeError:
                if port == 0 or time.monotonic() > end:
                    raise
                time.sleep(0.5)

    def url(self, port, path=""):
        return f"http://127.0.0.1:{port}/{path}"

    def connect(self, port, path, request, token=None):
        """A Connect unary call with JSON (what the pages send), as (HTTP status, JSON body)."""
        headers = {"content-type": "application/json", "connect-protocol-version": "1"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        response = httpx.post(self.url(port, path), json=request, headers=headers, timeout=10)
        return response.status_code, response.json()

    def cli(self, *args, token="staff-token"):
        """Runs the `orders` CLI against orders-server; returns its standard output."""
        result = subprocess.run([self.exe("orders"), "--port", str(self.orders_port), "--token", token, *args],
                                capture_output=True, text=True, timeout=20)
        if result.returncode != 0:
            raise RuntimeError(f"orders {' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
        return result.stdout

    def stop(self):
        for child in (self.orders, self.kart):
            child.stop(grace=10)
        shutil.rmtree(self.tmp, ignore_errors=True)


class Browser:
    """One headless Chromium; each page gets a window of its own."""

    def __init__(self, tmp):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
                     # Windows the test is not looking at must not be slowed down.
                     "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                     "--disable-backgrounding-occluded-windows", "--no-first-run", "--disable-extensions"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # A session of its own: Chromium's processes go down with chromedriver's group; and
        # its temporary files go with the run's.
        self.service = Service(executable_path=CHROMEDRIVER, env={**os.environ, "TMPDIR": tmp},
                               popen_kw={"start_new_session": True})
        self.driver = webdriver.Chrome(service=self.service, options=options)
        self.driver.set_page_load_timeout(20)
        self.driver.set_script_timeout(10)
        self.first = self.driver.current_window_handle
        processes.on_cleanup(self.quit)

    def open(self, url):
        """Opens `url` in a new window (the first page reuses the first window); returns it."""
        if self.first is not None:
            handle, self.first = self.first, None
        else:
            self.driver.switch_to.new_window("window")
            handle = self.driver.current_window_handle
        self.driver.get(url)
        return handle

    def close(self, handle):
        """Closes a page's window; the last one is kept, blank (closing it ends the session)."""
        self.driver.switch_to.window(handle)
        if len(self.driver.window_handles) > 1:
            self.driver.close()
            self.driver.switch_to.window(self.driver.window_handles[0])
        else:
            self.driver.get("about:blank")
            self.first = handle

    def js(self, handle, script, *args):
        self.driver.switch_to.window(handle)
        return self.driver.execute_script(script, *args)

    def errors(self):
        """The console's errors so far (reading them empties the log)."""
        try:
            return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        except Exception:  # noqa: BLE001 (a log is a nicety)
            return []

    def screenshot(self, handle, directory, name):
        if directory:
            self.driver.switch_to.window(handle)
            os.makedirs(directory, exist_ok=True)
            self.driver.save_screenshot(os.path.join(directory, name))

    def quit(self):
        done = threading.Thread(target=self.driver.quit, daemon=True)
        done.start()
        done.join(15)
        process = getattr(self.service, "process", None)
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # whatever quit() left behind
            except (ProcessLookupError, PermissionError):
                pass


def state(browser, handle, element_id):
    """An element's data-state (the pages' connection indicators)."""
    return browser.js(handle, "const e = document.getElementById(arguments[0]); return e ? e.dataset.state : null", element_id)


def text(browser, handle, element_id):
    return browser.js(handle, "const e = document.getElementById(arguments[0]); return e ? e.textContent : null", element_id)


def page_json(browser, handle, element_id):
    try:
        return json.loads(text(browser, handle, element_id) or "null")
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# 0. the pages are served


STATIC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))), "Services/Sources/WebApp/Static")
TYPES = {".html": "text/html", ".css": "text/css", ".js": "javascript"}


def check_served(world, report):
    files = sorted(name for name in os.listdir(STATIC) if os.path.splitext(name)[1] in TYPES)
    for name, port in (("swiftkart-server", world.kart_port), ("orders-server", world.orders_port)):
        wrong, stale = [], []
        for path in [""] + files:
            try:
                response = httpx.get(world.url(port, path), timeout=10)
            except httpx.HTTPError as error:
                wrong.append(f"/{path}: {type(error).__name__} {error}")
                continue
            kind = response.headers.get("content-type", "")
            wanted = TYPES[os.path.splitext(path or "index.html")[1]]
            if response.status_code != 200 or wanted not in kind:
                wrong.append(f"/{path}: HTTP {response.status_code} {kind!r}")
            elif path and response.content != open(os.path.join(STATIC, path), "rb").read():
                stale.append(path)
        report.check(f"0. {name} serves / and the {len(files)} page files with a browser's types", not wrong,
                     "; ".join(wrong[:4]) + (f" (+{len(wrong) - 4} more)" if len(wrong) > 4 else ""),
                     *([f"differ from Services/Sources/WebApp/Static (an older build?): {', '.join(stale)}"] if stale else []))


# ---------------------------------------------------------------------------------------------
# 1. races


def check_races(world, browser, report, screenshots):
    status, body = world.connect(world.kart_port, "SwiftKartService/ListRaces", {"limit": 100})
    races = body.get("races", []) if status == 200 else []
    if not races:
        report.check("1. races: ListRaces over Connect JSON", False, f"HTTP {status} {body}")
        return
    # The shortest race: at --speed 10 it is over within the check.
    race = min(races, key=lambda race: race.get("laps", 0))
    page = browser.open(world.url(world.kart_port, f"races.html?race={quote(race['name'])}"))
    started = time.monotonic()
    live = wait_until(lambda: state(browser, page, "status") == "live", 15)
    first = wait_until(lambda: (s := page_json(browser, page, "kart-state")) and len(s["karts"]) >= 2 and s, 10)
    if not live or not first:
        report.check(f"1. races: {race['name']} goes live with kart positions", False,
                     f"status {state(browser, page, 'status')!r}, kart state {page_json(browser, page, 'kart-state')}; "
                     f"detail {text(browser, page, 'status-detail')!r}; "
                     f"console {browser.errors()[:3]}")
        browser.close(page)
        return
    note(f"{race['name']} ({race.get('laps', 0)} laps): live after {time.monotonic() - started:.1f} s")

    read_at = time.monotonic()
    time.sleep(1)

    def moved():
        now = page_json(browser, page, "kart-state")
        before = {kart["number"]: (kart["latitude"], kart["longitude"]) for kart in first["karts"]}
        changed = [kart["number"] for kart in now["karts"] if before.get(kart["number"]) != (kart["latitude"], kart["longitude"])]
        return now["updates"] > first["updates"] and changed and (now, changed)

    second = wait_until(moved, 5)
    if second:
        now, changed = second
        rate = (now["updates"] - first["updates"]) / (time.monotonic() - read_at)
        report.check("1. races: karts move between two reads of the page (locations over WatchRace)", True, "",
                     f"{len(changed)} of {len(now['karts'])} karts moved; about {rate:.0f} locations messages a second")
    else:
        report.check("1. races: karts move between two reads of the page (locations over WatchRace)", False,
                     f"before {first}, after {page_json(browser, page, 'kart-state')}")

    rows_script = ("return [...document.querySelectorAll('#leaderboard tr')].map(tr => "
                   "({position: +tr.dataset.position, kart: +tr.dataset.kart, lap: +tr.dataset.lap, gap: +tr.dataset.gap}))")
    rows = wait_until(lambda: (rows := browser.js(page, rows_script)) and len(rows) >= 2 and rows, 5) or []
    karts = sorted(kart["number"] for kart in (page_json(browser, page, "kart-state") or {"karts": []})["karts"])
    report.check("1. races: the leaderboard has one row per kart, positions 1..n (standings over WatchRace)",
                 rows and [row["position"] for row in rows] == list(range(1, len(rows) + 1))
                 and sorted(row["kart"] for row in rows) == karts,
                 f"rows {rows}, karts {karts}",
                 "leaderboard: " + ", ".join(f"{row['position']}. #{row['kart']} lap {row['lap']} +{row['gap']:.1f}s" for row in rows[:4]) + " …")

    painted = browser.js(page, """
        const canvas = document.getElementById('track');
        const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let count = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) count++;
        return count;""")
    report.check("1. races: the map is drawn on the canvas", painted > 500, f"{painted} pixels painted")

    # The race's end: the stream ends OK and the page says so, without retrying. The picture
    # is taken on the way, once the karts have traced about a lap.
    def over():
        seen = state(browser, page, "status")
        if seen == "live" and time.monotonic() - started > 8 and not taken:
            browser.screenshot(page, screenshots, "races.png")
            taken.append(True)
        return seen in ("finished", "failed") and seen

    taken = []
    finished = wait_until(over, 70, interval=0.5)
    if not taken:
        browser.screenshot(page, screenshots, "races.png")
    seen = state(browser, page, "status")
    report.check("1. races: when the race is over the stream ends OK and the page says finished", finished == "finished",
                 f"status {seen!r} after {time.monotonic() - started:.0f} s: "
                 f"{text(browser, page, 'status-detail')!r}",
                 f"finished {time.monotonic() - started:.0f} s after opening the page")
    errors = browser.errors()
    if errors:
        note(f"console errors: {errors[:3]}")
    browser.close(page)


# ---------------------------------------------------------------------------------------------
# 2. orders


# Stamps, by the page's clock (this machine's), when each update id was first applied.
RECORD_ARRIVALS = """
    window.arrivals = window.arrivals || {};
    const target = document.getElementById('last-update-id');
    new MutationObserver(() => {
        const id = target.textContent;
        if (id && !(id in window.arrivals)) window.arrivals[id] = Date.now();
    }).observe(target, {childList: true, characterData: true, subtree: true});"""
TIMELINE_ROWS = ("return [...document.querySelectorAll('#timeline li')].map(li => "
                 "({updateId: li.dataset.updateId, title: li.querySelector('.title').textContent}))")


def check_orders(world, browser, report, screenshots):
    order_id = f"web-{uuid.uuid4().hex[:8]}"
    world.cli("create", "--id", order_id, "--eta", "30 min", token="alice-token")
    page = browser.open(world.url(world.orders_port, f"orders.html?order={order_id}&token=alice-token"))
    browser.js(page, RECORD_ARRIVALS)
    if not wait_until(lambda: state(browser, page, "banner") == "live", 15):
        report.check("2. orders: the page goes live (GetOrder, then WatchOrder)", False,
                     f"banner {state(browser, page, 'banner')!r}: {text(browser, page, 'banner')!r}; console {browser.errors()[:3]}")
        browser.close(page)
        return
    published, timeline = [], []  # update ids in publish order; the timeline's (update id, title)

    def publish(*event):
        update_id = world.cli("publish", order_id, *event).split()[0]
        published.append(update_id)
        if event[0] == "timeline":
            timeline.append({"updateId": update_id, "title": event[1]})
        return update_id

    def applied_last():
        return text(browser, page, "last-update-id") == published[-1]

    started = time.time()
    first = publish("timeline", "Order confirmed")
    returned = time.time()
    arrived = wait_until(lambda: browser.js(page, "return (window.arrivals || {})[arguments[0]]", first), 5)
    delay = arrived / 1000 - returned if arrived else None
    report.check("2. orders: an update published with the orders CLI is on the page within 1 s", delay is not None and delay <= 1.0,
                 "not shown within 5 s" if delay is None else f"shown {delay * 1000:.0f} ms after `orders publish` returned",
                 *([] if delay is None else [f"shown {delay * 1000:.0f} ms after `orders publish` returned "
                                             f"({arrived / 1000 - started:.2f} s after it started)"]))

    for event in (("status", "preparing"), ("timeline", "In the oven", "12 minutes"), ("courier", "52.5200", "13.4050"),
                  ("eta", "20 min")):
        publish(*event)
    wait_until(applied_last, 5)
    before_restart = len(published)

    # orders-server goes away (SIGTERM: it ends the watches and drains) and comes back on the
    # same port and database; the page must resume from its last update id.
    world.orders.stop(signal.SIGTERM, grace=10)
    down_at = time.monotonic()
    retrying = wait_until(lambda: state(browser, page, "banner") == "retrying", 5)
    time.sleep(max(0.0, 1.5 - (time.monotonic() - down_at)))  # a while down: retries meet a closed port
    world.orders, port = world.start_orders(world.orders_port)
    back_at = time.monotonic()
    live_again = wait_until(lambda: state(browser, page, "banner") == "live", 15)
    report.check("2. orders: while orders-server is down the banner says retrying, then live after its restart",
                 retrying and live_again and port == world.orders_port,
                 f"retrying seen: {bool(retrying)}, live again: {bool(live_again)} "
                 f"(banner {text(browser, page, 'banner')!r}), port {port} (was {world.orders_port})",
                 f"down {back_at - down_at:.1f} s; live again {time.monotonic() - back_at:.1f} s after the restart"
                 if live_again else "never live again")

    for event in (("status", "out-for-delivery"), ("courier", "52.5210", "13.4070"), ("timeline", "Picked up", "by Sam"),
                  ("eta", "5 min"), ("courier", "52.5230", "13.4100"), ("timeline", "Delivered"), ("status", "delivered")):
        publish(*event)
    wait_until(applied_last, 10)

    status, snapshot = world.connect(world.orders_port, "orders.v1.OrderTracking/GetOrder", {"orderId": order_id}, token="alice-token")
    page_state = page_json(browser, page, "order-state") or {}
    rows = browser.js(page, TIMELINE_ROWS)
    applied = page_state.get("applied", [])
    report.check("2. orders: across the restart the page applied every update exactly once, in order",
                 applied == published and page_state.get("duplicates") == 0,
                 describe_delivery(published, applied, "applied") + f"; duplicates dropped by the page: {page_state.get('duplicates')}",
                 f"{len(published)} updates ({before_restart} before the restart), {len(applied)} applied; "
                 f"page bootstraps (GetOrder): {page_state.get('bootstraps')}")
    snapshot_titles = [event.get("title", "") for event in snapshot.get("timeline", [])] if status == 200 else None
    report.check("2. orders: the page's timeline is GetOrder's, one row per timeline update, keyed by its update id",
                 snapshot_titles == [row["title"] for row in timeline] and rows == timeline
                 and text(browser, page, "last-update-id") == snapshot.get("latestUpdateId"),
                 f"GetOrder: HTTP {status} timeline {snapshot_titles}, latest {snapshot.get('latestUpdateId')}; page rows {rows}, "
                 f"published {timeline}; last applied {text(browser, page, 'last-update-id')}, bootstraps {page_state.get('bootstraps')}",
                 f"timeline: {' / '.join(row['title'] for row in rows)}")
    shown = browser.js(page, "return [document.getElementById('order-status').textContent, "
                             "document.getElementById('order-eta').textContent, document.getElementById('courier-text').textContent]")
    report.check("2. orders: status, ETA and courier as GetOrder has them", shown[0] == "Delivered" and shown[1] == snapshot.get("etaDisplay")
                 and shown[2] == "52.52300, 13.41000",
                 f"page {shown}, GetOrder {snapshot.get('status')} {snapshot.get('etaDisplay')!r} {snapshot.get('courier')}")
    browser.screenshot(page, screenshots, "orders.png")
    check_order_choices(world, browser, report, order_id)
    check_out_of_range(world, browser, report, page, order_id)
    errors = [error for error in browser.errors() if "ERR_CONNECTION_REFUSED" not in error]  # those while it was down
    if errors:
        note(f"console errors: {errors[:3]}")
    browser.close(page)


ORDER_CHOICES = ("return [...document.querySelectorAll('#order-choices a')].map(a => "
                 "new URLSearchParams(a.search).get('order') + ' ' + new URLSearchParams(a.search).get('token'))")


def check_order_choices(world, browser, report, order_id):
    """Opened without an order, the page offers the orders its token may watch (ListOrders):
    alice's order to alice, linked with her token, and not to bob."""
    offered = {}
    for token in ("alice-token", "bob-token"):
        page = browser.open(world.url(world.orders_port, f"orders.html?token={token}"))
        wait_until(lambda: browser.js(page, ORDER_CHOICES) or "none" in text(browser, page, "banner"), 10)
        offered[token] = browser.js(page, ORDER_CHOICES)
        browser.close(page)
    report.check("2. orders: without ?order= the page offers the orders its token may watch, and only those",
                 f"{order_id} alice-token" in offered["alice-token"] and not any(order_id in link for link in offered["bob-token"]),
                 f"alice was offered {offered['alice-token'][:5]}, bob {offered['bob-token'][:5]}",
                 f"alice: {len(offered['alice-token'])} orders offered; bob: {len(offered['bob-token'])}")


def check_out_of_range(world, browser, report, page, order_id):
    """While orders-server is down, a second one on the same database (keeping 2 updates per
    order) takes 4 updates: the page's position is then older than the log keeps, so its
    resume fails OUT_OF_RANGE and it must start over from GetOrder."""
    began = time.monotonic()
    world.orders.stop(signal.SIGTERM, grace=10)
    stopped = time.monotonic()
    other, other_port = start_server([world.exe("orders-server"), "--port", "0", "--database", world.orders_db, *world.web,
                                      "--retain-updates", "2"], "orders-server (retaining 2)")
    titles = [f"Meanwhile {index}" for index in range(4)]
    try:
        for title in titles:
            subprocess.run([world.exe("orders"), "--port", str(other_port), "--token", "staff-token", "publish", order_id,
                            "timeline", title], capture_output=True, timeout=20, check=True)
    finally:
        other.stop(signal.SIGTERM, grace=10)
    world.orders, _ = world.start_orders(world.orders_port)
    restarted = time.monotonic()
    latest = world.cli("publish", order_id, "eta", "any minute").split()[0]
    caught_up = wait_until(lambda: text(browser, page, "last-update-id") == latest, 15)
    note(f"stopping orders-server took {stopped - began:.1f} s, the other one's turn {restarted - stopped:.1f} s, "
         f"the page caught up {time.monotonic() - restarted:.1f} s after the restart")
    status, snapshot = world.connect(world.orders_port, "orders.v1.OrderTracking/GetOrder", {"orderId": order_id}, token="alice-token")
    page_state = page_json(browser, page, "order-state") or {}
    rows = [row["title"] for row in browser.js(page, TIMELINE_ROWS)]
    snapshot_titles = [event.get("title", "") for event in snapshot.get("timeline", [])] if status == 200 else None
    report.check("2. orders: resuming from a position the log no longer keeps (OUT_OF_RANGE), the page starts over from GetOrder",
                 caught_up and page_state.get("bootstraps") == 2 and rows == snapshot_titles and titles[-1] in rows
                 and text(browser, page, "order-eta") == "any minute",
                 f"caught up: {bool(caught_up)}, bootstraps {page_state.get('bootstraps')}, banner {text(browser, page, 'banner')!r}; "
                 f"rows {rows}, GetOrder {snapshot_titles}",
                 f"bootstraps: {page_state.get('bootstraps')}; {len(rows)} timeline rows as GetOrder has them")


# ---------------------------------------------------------------------------------------------
# 3. chat


MESSAGES = ("return [...document.querySelectorAll('#messages li')].map(li => ({id: li.dataset.id, nickname: li.dataset.nickname, "
            "text: li.querySelector('.text').textContent, mine: li.classList.contains('mine')}))")
CLI_MESSAGE = re.compile(r"^\[\d\d:\d\d\] (.*?): (.*)$")


def check_chat(world, browser, report, screenshots):
    room, tag = f"web-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:4]
    nicks = {"ann": f"ann-{tag}", "bob": f"bob-{tag}", "cli": f"cli-{tag}"}
    pages = {name: browser.open(world.url(world.orders_port, f"chat.html?room={room}&nick={nicks[name]}")) for name in ("ann", "bob")}
    cli = Child([world.exe("chat"), room, "--nick", nicks["cli"], "--port", world.orders_port], stdin=subprocess.PIPE)
    try:
        live = wait_until(lambda: all(state(browser, page, "status") == "live" for page in pages.values()), 10)
        joined = cli.wait_for(lambda line: line.startswith("-- you joined"), 10)
        if not live or joined is None:
            report.check("3. chat: two pages (WebSocket) and the chat CLI (gRPC) join one room", False,
                         f"pages: {[(state(browser, page, 'status'), text(browser, page, 'status-detail')) for page in pages.values()]}; "
                         f"CLI: {cli.tail()}; console {browser.errors()[:3]}")
            return
        sends = [(name, f"{name} {index} {tag}") for index in (1, 2) for name in ("ann", "bob", "cli")]
        for name, line in sends:
            if name == "cli":
                cli.process.stdin.write((line + "\n").encode())
                cli.process.stdin.flush()
            else:
                browser.driver.switch_to.window(pages[name])
                browser.driver.find_element(By.CSS_SELECTOR, "#send input[name=text]").send_keys(line)
                browser.driver.find_element(By.CSS_SELECTOR, "#send button").click()
        texts = {line for _, line in sends}

        def seen():
            """Each participant's (nickname, text) of this check's messages, in arrival order."""
            views = {name: [(m["nickname"], m["text"]) for m in browser.js(page, MESSAGES) if m["text"] in texts]
                     for name, page in pages.items()}
            views["cli"] = [match.groups() for line in list(cli.stdout)
                            if (match := CLI_MESSAGE.match(line)) and match.group(2) in texts]
            return views

        wait_until(lambda: all(len(view) >= len(sends) for view in seen().values()), 10, interval=0.2)
        views = seen()
        orders = {name: [line for _, line in view] for name, view in views.items()}
        complete = all(sorted(order) == sorted(texts) for order in orders.values())
        report.check("3. chat: two pages (WebSocket) and the chat CLI (gRPC) each see all 6 messages once, in one order",
                     complete and orders["ann"] == orders["bob"] == orders["cli"],
                     "; ".join(f"{name} saw {order}" for name, order in orders.items()),
                     f"order: {' / '.join(orders['ann'])}")
        expected_nick = {line: nicks[name] for name, line in sends}
        wrong_nicks = {name: [(nick, line) for nick, line in view if nick != expected_nick[line]] for name, view in views.items()}
        report.check("3. chat: everyone sees each message under its sender's nickname", not any(wrong_nicks.values()),
                     f"unexpected nicknames: {wrong_nicks}")

        marks = {}
        for name, page in pages.items():
            my_id = text(browser, page, "my-id")
            messages = [m for m in browser.js(page, MESSAGES) if m["text"] in texts]
            marks[name] = [(m["text"], m["mine"], m["id"] == my_id) for m in messages
                           if m["mine"] != (m["text"].startswith(f"{name} ")) or m["mine"] != (m["id"] == my_id)]
        report.check("3. chat: each page marks as its own exactly the messages it sent (carrying its id)", not any(marks.values()),
                     f"wrongly marked (text, mine, carries the page's id): {marks}")
        browser.screenshot(pages["ann"], screenshots, "chat.png")
    finally:
        if cli.alive():
            cli.process.stdin.close()  # Ctrl-D: it leaves the room
            cli.stop(grace=5)
        errors = browser.errors()
        if errors:
            note(f"console errors: {errors[:3]}")
        for page in pages.values():
            browser.close(page)


# ---------------------------------------------------------------------------------------------
# Running it all, within bounds


def run_bounded(name, function, limit, report):
    """Runs one part for at most `limit` seconds; False if it hangs (the browser is then in an
    unknown state, so the caller stops)."""
    finished, failure, seconds = processes.run_in_thread(function, limit)
    if not finished:
        report.check(f"{name}. finishes within {limit} s", False, "still running (a hang): the run stops here")
        return False
    if failure:
        report.check(f"{name}. ran to its end", False, failure)
    note(f"({name} took {seconds:.1f} s)")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="directory of the built executables")
    parser.add_argument("--screenshots", help="directory for races.png, orders.png and chat.png")
    parser.add_argument("--only", help="comma-separated parts to run (0,1,2,3; default all)")
    parser.add_argument("--web-root", help="serve the pages from DIR (e.g. Services/Sources/WebApp/Static, to try edits without "
                                           "a build) instead of the copy beside the executables")
    args = parser.parse_args()
    processes.install_cleanup()
    # The whole run is bounded too: whatever happens, it ends.
    signal.signal(signal.SIGALRM, lambda *_: (print("FAIL global time limit", flush=True), processes.stop_all(), os._exit(1)))
    signal.alarm(225)  # inside the 240 s WebAppTests gives the whole run

    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        print(f"FAIL Chromium is installed: missing {', '.join(missing)} (scripts/bootstrap installs chromium and chromium-driver)")
        print("checks: 0 ok, 1 failed")
        exit_now(1)
    screenshots = os.path.abspath(args.screenshots) if args.screenshots else None
    world = World(os.path.abspath(args.bin), os.path.abspath(args.web_root) if args.web_root else None)
    note(f"swiftkart-server port {world.kart_port}, orders-server port {world.orders_port}")
    report = Report()
    browser = Browser(world.tmp)
    note(f"{browser.driver.capabilities.get('browserName')} {browser.driver.capabilities.get('browserVersion')}")
    chosen = set(args.only.split(",")) if args.only else {"0", "1", "2", "3"}
    if "0" in chosen:
        check_served(world, report)
    parts = [("1", lambda: check_races(world, browser, report, screenshots), 90),
             ("2", lambda: check_orders(world, browser, report, screenshots), 80),
             ("3", lambda: check_chat(world, browser, report, screenshots), 40)]
    for name, function, limit in parts:
        if name in chosen and not run_bounded(name, function, limit, report):
            break
    browser.quit()
    world.stop()
    processes.stop_all()
    exit_now(report.finish())


if __name__ == "__main__":
    main()
