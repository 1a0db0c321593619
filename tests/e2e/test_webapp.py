"""The built-in web app in a real browser: Debian's chromium, headless, driven by Selenium.

One `hearth serve` with the SmolLM2 starter model (HEARTH_SMOLLM2_GGUF) on a free loopback port
and one browser session serve the whole module; the tests run in file order and build on each
other (the conversation of the streaming test is the one found again after a reload). Every
test ends by reading chromium's console log: any SEVERE entry fails it.

The download tests start a second server on the tiny test model, with HF_ENDPOINT at the loopback
hub of fakehub.py and an empty HF_HUB_CACHE in a temp dir: nothing reaches a real hub or cache.

Screenshots of each view go to HEARTH_TEST_ARTIFACTS (default: a fresh temp dir, printed).
Skips when chromium or chromedriver is missing (make setup installs both) or the model is unset.
Bounded: every wait has a deadline, replies are capped by the sampling popover's max tokens.
"""
import http.client
import json
import os
import pathlib
import pty
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import ROOT
from fakehub import FakeHub

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

EXE = pathlib.Path(os.environ.get("HEARTH_BIN", ROOT / "build" / "hearth"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MODEL = os.environ.get("HEARTH_SMOLLM2_GGUF")
TINY = ROOT / "tests" / "golden" / "tiny" / "tiny-qwen2.gguf"

pytestmark = [
    pytest.mark.skipif(not CHROMIUM or not DRIVER, reason="chromium and chromium-driver are not installed"),
    pytest.mark.skipif(not MODEL, reason="HEARTH_SMOLLM2_GGUF is not set"),
]


def start_server(*args, env=None, stdout=subprocess.DEVNULL, timeout=30, model=None):
    """(process, port, log path) of a `hearth serve` on 127.0.0.1, port chosen by the kernel."""
    if not EXE.exists():
        pytest.fail(f"{EXE} is missing: run `make build` first")
    log = tempfile.NamedTemporaryFile(prefix="hearth-web-", suffix=".log", delete=False)
    e = dict(os.environ)
    e.update(env or {})
    # A fixed default seed: a request the page sends without temperature 0 still samples the same
    # tokens on every run (the chat tests also set temperature 0 in the sampling popover).
    proc = subprocess.Popen([str(EXE), "serve", model or MODEL, "--host", "127.0.0.1", "--port", "0",
                             "--seed", "1", *args],
                            stdout=stdout, stderr=log, stdin=subprocess.DEVNULL, env=e, cwd=ROOT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = pathlib.Path(log.name).read_text(errors="replace")
        m = re.search(r"App +http://127\.0\.0\.1:(\d+)/", text)
        if m:
            return proc, int(m.group(1)), log.name
        if proc.poll() is not None:
            pytest.fail(f"hearth serve exited with {proc.returncode}:\n{text}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("hearth serve was not ready in time")


def stop_server(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def server():
    proc, port, log = start_server("--no-open")
    yield f"http://127.0.0.1:{port}", port
    stop_server(proc)
    os.unlink(log)


@pytest.fixture(scope="module")
def shots():
    d = os.environ.get("HEARTH_TEST_ARTIFACTS") or tempfile.mkdtemp(prefix="hearth-webapp-")
    os.makedirs(d, exist_ok=True)
    print(f"\nweb app screenshots: {d}")
    return pathlib.Path(d)


@pytest.fixture(scope="module")
def browser(server):
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,800", "--disable-extensions", "--no-first-run", "--disable-sync",
              "--disable-background-networking"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=o, service=Service(DRIVER))
    d.set_page_load_timeout(20)
    d.set_script_timeout(10)
    yield d
    d.quit()


class Hung(Exception):
    pass


def on_alarm(signum, frame):
    raise Hung("the test ran past its 60 s limit (a hung page or server?)")


@pytest.fixture(autouse=True)
def console_clean(request):
    """Each test: at most 60 s (a page stuck in a script loop also stalls chromedriver, which
    Selenium's own timeouts do not cover); after it, chromium's console holds no errors."""
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if "browser" not in request.fixturenames:
        return
    d = request.getfixturevalue("browser")
    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not bad, f"console errors: {bad}"


def http_get(port, path, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def stats(port):
    return json.loads(http_get(port, "/stats")[2])


def wait(d, cond, timeout=10, what="condition"):
    return WebDriverWait(d, timeout, poll_frequency=0.05).until(lambda _: cond(), message=what)


def js(d, script, *args):
    return d.execute_script(script, *args)


def last_reply(d):
    return js(d, "const m=[...document.querySelectorAll('.msg.assistant')].pop();"
                 "return m ? {text: m.querySelector('.body').textContent, meta: (m.querySelector('.meta')||{}).textContent||'',"
                 "error: (m.querySelector('.error')||{}).textContent||'', pending: !!m.querySelector('.cursor')} : null;")


def set_sampling(d, **values):
    """Type values (max_tokens=64, temperature=0, ...) into the sampling popover, as a user would."""
    d.find_element(By.ID, "samp-btn").click()
    for key, v in values.items():
        box = d.find_element(By.ID, "s-" + key)
        box.clear()
        box.send_keys(str(v))
    d.find_element(By.ID, "samp-close").click()
    saved = js(d, "return JSON.parse(localStorage.getItem('hearth.sampling.v1'))")
    assert all(saved.get(k) == v for k, v in values.items()), saved


def set_max_tokens(d, n):
    set_sampling(d, max_tokens=n)


def no_horizontal_scroll(d):
    return js(d, "return document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1"
                 " && document.body.scrollWidth <= document.documentElement.clientWidth + 1")


# ---------- the server side of the app ----------

def test_assets_routes_and_caching(server):
    _, port = server
    st, h, body = http_get(port, "/")
    assert st == 200 and h["content-type"].startswith("text/html")
    assert h["cache-control"] == "no-cache" and h["etag"].startswith('"')
    assert "script-src 'self'" in h["content-security-policy"]
    assert b"/app/app.js" in body
    for name in ("core", "markdown", "chat", "status", "library", "app"):  # the app's scripts, in order
        assert f'<script src="/app/{name}.js" defer>'.encode() in body
        st, h, _ = http_get(port, f"/app/{name}.js")
        assert st == 200 and h["content-type"].startswith("text/javascript"), name
    st, h, _ = http_get(port, "/app/app.js")
    assert st == 200 and h["content-type"].startswith("text/javascript")
    st, _, body = http_get(port, "/app/app.js", {"If-None-Match": h["etag"]})
    assert st == 304 and body == b""
    st, h, _ = http_get(port, "/app/app.css")
    assert st == 200 and h["content-type"].startswith("text/css")
    for view in ("chat", "status"):
        st, h, _ = http_get(port, "/" + view)
        assert st == 302 and h["location"] == "/#/" + view
    st, h, _ = http_get(port, "/library", {"Accept": "text/html,*/*"})
    assert st == 302 and h["location"] == "/#/library"
    st, h, body = http_get(port, "/library")  # an API client gets the store's listing
    assert st == 200 and h["content-type"].startswith("application/json") and "models" in json.loads(body)
    assert http_get(port, "/app/nope.js")[0] == 404
    st, _, body = http_get(port, "/v1/app/config")
    cfg = json.loads(body)
    assert st == 200 and cfg["chat"] is True and cfg["defaults"]["temperature"] == 0.7
    assert cfg["n_ctx"] > 0


# ---------- chat ----------

def test_chat_streams_a_reply(server, browser, shots):
    base, port = server
    d = browser
    d.get(base + "/")
    js(d, "localStorage.clear()")
    d.get(base + "/chat")  # deep link: lands on #/chat
    wait(d, lambda: d.current_url.endswith("/#/chat"), what="the /chat redirect")
    wait(d, lambda: "SmolLM2" in d.find_element(By.ID, "model-pill").text, what="the config")
    # Greedy: SmolLM2's greedy reply to this conversation is a run of digits that fills all 64
    # tokens (and the next test's fills 1000), so the stream is long on every run.
    set_sampling(d, max_tokens=64, temperature=0)
    box = d.find_element(By.ID, "input")
    box.send_keys("Count from 1 to 40, one number per line.")
    box.send_keys(Keys.SHIFT, Keys.ENTER)  # Shift+Enter: a new line, not a send
    assert "\n" in box.get_attribute("value") and not d.find_elements(By.CSS_SELECTOR, ".msg")
    # Every length the reply's text takes in the page, recorded by the page itself on each DOM
    # change: polling over WebDriver can miss a fast stream's intermediate states.
    js(d, "window.__lens=[]; new MutationObserver(()=>{const m=[...document.querySelectorAll('.msg.assistant')].pop();"
          "const b=m&&m.querySelector('.body'); if(!b) return; const n=b.textContent.length;"
          "if(!__lens.length||__lens[__lens.length-1]!==n) __lens.push(n);})"
          ".observe(document.getElementById('messages')||document.body,{childList:true,subtree:true,characterData:true});")
    box.send_keys("Thanks!", Keys.ENTER)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = last_reply(d)
        if r and not r["pending"] and "tok/s" in r["meta"]:
            break
        time.sleep(0.03)
    lengths = js(d, "return window.__lens")
    r = last_reply(d)
    assert r and not r["pending"], f"no finished reply: {r}"
    assert not r["error"], r["error"]
    # Streamed: the text was seen at several lengths before the end (markdown applied mid-stream,
    # e.g. a list item forming, may shorten the visible text, so the order is not checked).
    assert lengths and lengths[-1] == len(r["text"]), (lengths, len(r["text"]))
    grown = {n for n in lengths if 0 < n < lengths[-1]}
    assert len(grown) >= 3, lengths
    assert re.search(r"\d+ prompt · 64 tokens · [\d.]+ tok/s", r["meta"]), r["meta"]
    assert d.find_element(By.ID, "send").is_displayed() and not d.find_element(By.ID, "stop").is_displayed()
    title = d.find_element(By.CSS_SELECTOR, "#conv-list li.current .conv-open").text
    assert title.startswith("Count from 1 to 40")
    d.save_screenshot(str(shots / "chat.png"))


def test_esc_stops_the_generation(server, browser):
    _, port = server
    d = browser
    set_max_tokens(d, 1000)
    before = stats(port)["generations"]["cancelled"]
    box = d.find_element(By.ID, "input")
    box.send_keys("Count from 1 to 500, one number per line.", Keys.ENTER)
    wait(d, lambda: len((last_reply(d) or {}).get("text", "")) > 10 or not (last_reply(d) or {}).get("pending", 1),
         timeout=20, what="a reply starting")
    r = last_reply(d)
    assert r["pending"] and not r["error"], r
    assert d.find_element(By.ID, "stop").is_displayed()
    box.send_keys(Keys.ESCAPE)
    wait(d, lambda: not last_reply(d)["pending"], timeout=5, what="the reply to stop")
    r = last_reply(d)
    assert "stopped" in r["meta"] and not r["error"]
    # The server saw the disconnect and cancelled the generation; its token count stops rising.
    wait(d, lambda: stats(port)["generations"]["cancelled"] > before, timeout=5, what="a cancelled generation")
    s = stats(port)
    assert s["generations"]["active"] == 0
    tok = s["tokens"]["completion"]
    time.sleep(0.5)
    assert stats(port)["tokens"]["completion"] == tok
    set_max_tokens(d, 40)


def test_regenerate_and_edit(server, browser):
    d = browser
    n_msgs = len(d.find_elements(By.CSS_SELECTOR, ".msg"))
    d.find_element(By.XPATH, "//div[contains(@class,'assistant')][last()]//button[text()='Regenerate']").click()
    wait(d, lambda: (last_reply(d) or {}).get("pending") is False and "tok/s" in last_reply(d)["meta"],
         timeout=30, what="the regenerated reply")
    assert len(d.find_elements(By.CSS_SELECTOR, ".msg")) == n_msgs
    d.find_element(By.XPATH, "//div[contains(@class,'msg user')][last()]//button[text()='Edit']").click()
    box = d.find_element(By.ID, "input")
    assert box.get_attribute("value").startswith("Count from 1")
    assert len(d.find_elements(By.CSS_SELECTOR, ".msg")) == n_msgs - 2
    box.clear()
    box.send_keys("Say hello.", Keys.ENTER)
    wait(d, lambda: (last_reply(d) or {}).get("pending") is False and "tok/s" in last_reply(d)["meta"],
         timeout=30, what="the reply to the edited message")


def test_reload_finds_the_conversation(server, browser):
    base, _ = server
    d = browser
    d.find_element(By.ID, "new-chat").click()
    assert len(d.find_elements(By.CSS_SELECTOR, "#conv-list li")) == 2
    d.refresh()
    wait(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#conv-list li")) == 2, what="the list after a reload")
    titles = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#conv-list .conv-open")]
    hit = [i for i, t in enumerate(titles) if t.startswith("Count from 1 to 40")]
    assert hit, titles
    d.find_elements(By.CSS_SELECTOR, "#conv-list .conv-open")[hit[0]].click()
    wait(d, lambda: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant")) == 2, what="the old messages")
    assert "Say hello." in d.find_element(By.ID, "messages").text
    # Delete the empty one.
    empty = [i for i, t in enumerate(titles) if t == "New chat"]
    assert empty
    js(d, "document.querySelectorAll('#conv-list .conv-del')[arguments[0]].click()", empty[0])
    assert len(d.find_elements(By.CSS_SELECTOR, "#conv-list li")) == 1


# ---------- rendering: markdown, and markup in replies stays text ----------

REPLY = """# Heading

Some **bold**, *italic* and `code`, a [link](https://example.com) and <b>not bold</b>.

<script>window.__pwned = 1</script>
<img src=x onerror="window.__pwned = 2">

| col a | col b |
|---|---|
| 1 | <i>two</i> |

- one
- two
  - nested

```python
print("<script>hi</script>")
```

A long line: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.
"""


def test_markdown_and_markup_as_text(server, browser, shots):
    base, _ = server
    d = browser
    conv = {"id": "xss", "title": "markup test", "created": 1, "updated": 9e15, "system": "",
            "messages": [{"role": "user", "content": "<script>window.__pwned = 3</script> hi"},
                         {"role": "assistant", "content": REPLY, "usage": {"prompt_tokens": 5, "completion_tokens": 9},
                          "tps": 12.5}]}
    js(d, "const c = JSON.parse(localStorage.getItem('hearth.convs.v1')); c.unshift(arguments[0]);"
          "localStorage.setItem('hearth.convs.v1', JSON.stringify(c)); localStorage.setItem('hearth.current', 'xss');",
       conv)
    d.refresh()
    wait(d, lambda: d.find_elements(By.CSS_SELECTOR, ".msg.assistant h1"), what="the rendered reply")
    msgs = d.find_element(By.ID, "messages")
    assert js(d, "return window.__pwned") is None
    assert not msgs.find_elements(By.TAG_NAME, "script") and not msgs.find_elements(By.TAG_NAME, "img")
    assert not msgs.find_elements(By.CSS_SELECTOR, ".body b, .body i")
    text = msgs.text
    assert "<script>window.__pwned = 1</script>" in text and "<b>not bold</b>" in text
    assert "<script>window.__pwned = 3</script> hi" in text
    body = msgs.find_element(By.CSS_SELECTOR, ".msg.assistant .body")
    assert body.find_element(By.TAG_NAME, "h1").text == "Heading"
    assert body.find_element(By.TAG_NAME, "strong").text == "bold"
    assert body.find_element(By.TAG_NAME, "em").text == "italic"
    a = body.find_element(By.TAG_NAME, "a")
    assert a.get_attribute("href") == "https://example.com/" and a.get_attribute("rel") == "noopener noreferrer"
    assert [c.text for c in body.find_elements(By.CSS_SELECTOR, "table td")] == ["1", "<i>two</i>"]
    assert len(body.find_elements(By.CSS_SELECTOR, "ul ul li")) == 1
    code = body.find_element(By.CSS_SELECTOR, ".codeblock code")
    assert code.text == 'print("<script>hi</script>")'
    assert body.find_element(By.CSS_SELECTOR, ".codeblock .code-head").text.startswith("python")
    body.find_element(By.CSS_SELECTOR, ".codeblock button").click()
    wait(d, lambda: body.find_element(By.CSS_SELECTOR, ".codeblock button").text in ("Copied", "Copy failed"),
         what="the copy button")
    assert no_horizontal_scroll(d)
    d.save_screenshot(str(shots / "markdown.png"))


def test_narrow_layout_360px(server, browser, shots):
    d = browser
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": 360, "height": 740, "deviceScaleFactor": 2, "mobile": True})
    try:
        d.refresh()
        wait(d, lambda: d.find_elements(By.CSS_SELECTOR, ".msg.assistant h1"), what="the reply at 360 px")
        assert js(d, "return document.documentElement.clientWidth") == 360
        assert no_horizontal_scroll(d)
        assert not d.find_element(By.ID, "sidebar").is_displayed() or \
            js(d, "return document.getElementById('sidebar').getBoundingClientRect().right") <= 0
        assert d.find_element(By.ID, "send").is_displayed() and d.find_element(By.ID, "input").is_displayed()
        d.save_screenshot(str(shots / "chat-360.png"))
        d.find_element(By.ID, "menu-btn").click()
        wait(d, lambda: js(d, "return document.getElementById('sidebar').getBoundingClientRect().left") >= 0,
             what="the drawer")
        assert no_horizontal_scroll(d)
        d.save_screenshot(str(shots / "drawer-360.png"))
        d.get(d.current_url.split("#")[0] + "#/status")
        wait(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#status-cards .card")) >= 6, what="status at 360 px")
        assert no_horizontal_scroll(d)
        d.save_screenshot(str(shots / "status-360.png"))
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# ---------- status and library ----------

def chat_once(port, system):
    body = json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hi"}],
                       "max_tokens": 4, "temperature": 0}).encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, r.read()
        r.read()
    finally:
        c.close()


def test_status_view(server, browser, shots):
    base, port = server
    d = browser
    # the same long system prompt twice: the second request reuses the first one's KV blocks
    system = "You are a careful assistant who answers in one short sentence. " * 4
    chat_once(port, system)
    chat_once(port, system)
    s = stats(port)
    assert s["prompt_cache"]["hits"] >= 1 and s["prompt_cache"]["cached_bytes"] > 0, s["prompt_cache"]
    d.get(base + "/status")
    wait(d, lambda: d.current_url.endswith("/#/status"), what="the /status redirect")
    wait(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#status-cards .card")) >= 6, what="the status cards")
    # One snapshot of every card, read inside the page: the view re-renders its cards on each poll
    # (every 2 s), so element handles kept across WebDriver calls may go stale.
    snap = js(d, "return [...document.querySelectorAll('#status-cards .card')].map(c => ["
                 "c.querySelector('h2').textContent.toLowerCase(), c.querySelector('.big').textContent,"
                 "(c.querySelector('.sub') || {}).textContent || ''])")
    cards = {h: big.strip() for h, big, _ in snap}
    subs = {h: sub.strip() for h, _, sub in snap}
    assert "SmolLM2" in cards["model"]
    assert int(cards["generations"].replace(",", "")) >= 3
    assert int(cards["tokens"].replace(",", "")) > 0
    assert cards["decode speed"].endswith("tok/s")
    assert re.fullmatch(r"\d+ / 8", cards["requests running"]), cards["requests running"]
    assert re.search(r"\d+ waiting", subs["requests running"])
    hit = re.fullmatch(r"(\d+)% hits", cards["prefix cache"])
    assert hit and int(hit.group(1)) > 0, cards["prefix cache"]
    m = re.search(r"([\d,]+) hits", subs["prefix cache"])
    assert m and int(m.group(1).replace(",", "")) >= 1 and " B cached" not in subs["prefix cache"], subs["prefix cache"]
    assert re.fullmatch(r"\d+(\.\d)?% used", cards["kv pool"]), cards["kv pool"]
    used = re.match(r"([\d,]+) of ([\d,]+) blocks", subs["kv pool"])
    assert used and int(used.group(1).replace(",", "")) > 0, subs["kv pool"]
    assert cards["memory budget"] != "none" and "max safe context" in subs["memory budget"]
    wait(d, lambda: "tok/s" in d.find_element(By.ID, "chart-note").text, timeout=6, what="two polls for the chart")
    assert js(d, "return document.getElementById('tps-chart').width") > 0
    d.save_screenshot(str(shots / "status.png"))


def test_library_view(server, browser, shots):
    base, _ = server
    d = browser
    d.get(base + "/#/library")
    wait(d, lambda: d.find_elements(By.CSS_SELECTOR, "#library .badge"), what="the library table")
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#library tbody tr")]
    serving = [r for r in rows if "serving" in r]
    assert len(serving) == 1 and "SmolLM2" in serving[0], rows
    assert "/library" in d.find_element(By.ID, "library").text
    d.save_screenshot(str(shots / "library.png"))


# ---------- downloads from the library view ----------

@pytest.fixture(scope="module")
def hub_server(tmp_path_factory):
    """(base URL, port, hub): a server on the tiny model, its store an empty cache fed by a fake hub."""
    hub = FakeHub().start()
    tmp = tmp_path_factory.mktemp("webdl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "XDG_"))}
    env.update(HF_HUB_CACHE=str(tmp / "hub"), XDG_CACHE_HOME=str(tmp / "xdg"), HOME=str(tmp / "home"),
               HF_ENDPOINT=hub.url, HF_TOKEN="", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    proc, port, log = start_server("--no-open", env=env, model=str(TINY))
    yield f"http://127.0.0.1:{port}", port, hub
    stop_server(proc)
    os.unlink(log)
    hub.stop()


def http_post_json(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


def jobs_in_view(d):
    return js(d, "return [...document.querySelectorAll('#downloads .dl-job')].map(li => ({id: li.dataset.id,"
                 "state: li.querySelector('.dl-state').textContent, text: li.textContent,"
                 "done: +li.querySelector('.dl-bytes').dataset.done, total: +li.querySelector('.dl-bytes').dataset.total,"
                 "error: (li.querySelector('.error') || {}).textContent || ''}))")


def test_download_from_the_library_view(hub_server, browser, shots):
    base, port, hub = hub_server
    size = TINY.stat().st_size
    hub.add_repo("acme/webdl", {"tiny-qwen2.gguf": TINY.read_bytes(), "README.md": b"# webdl\n"})
    hub.faults["tiny-qwen2.gguf"] = {"throttle": size // 3}  # about 3 s: the view sees it running
    d = browser
    d.get(base + "/#/library")
    wait(d, lambda: d.find_element(By.ID, "dl-form").is_displayed(), what="the download form")
    assert "acme/webdl" not in d.find_element(By.ID, "library").text
    # labelled fields, filled and sent from the keyboard (Enter in the last field submits)
    for fid, label in (("dl-repo", "Repository"), ("dl-file", "Files"), ("dl-rev", "Revision")):
        assert js(d, "return document.getElementById(arguments[0]).labels[0].textContent.trim()", fid).startswith(label)
    d.find_element(By.ID, "dl-repo").send_keys("acme/webdl")
    d.find_element(By.ID, "dl-repo").send_keys(Keys.TAB, "*.gguf", Keys.TAB, "main")
    assert js(d, "return document.activeElement.id") == "dl-rev"
    d.find_element(By.ID, "dl-rev").send_keys(Keys.ENTER)
    wait(d, lambda: jobs_in_view(d), what="the download in the list")
    first = jobs_in_view(d)[0]
    assert "acme/webdl:*.gguf" in first["text"] and first["state"] in ("running", "done"), first
    seen = {first["state"]}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and jobs_in_view(d)[0]["state"] == "running":
        seen.add("running")
        time.sleep(0.1)
    job = jobs_in_view(d)[0]
    assert "running" in seen and job["state"] == "done", (seen, job)
    assert job["done"] == job["total"] == size and not job["error"], job
    # the server agrees, and the library list was refreshed without a reload
    server_job = next(j for j in json.loads(http_get(port, "/downloads")[2])["downloads"] if j["id"] == job["id"])
    assert server_job["state"] == "done" and server_job["bytes_done"] == size
    assert not d.find_element(By.ID, "dl-error").is_displayed()
    wait(d, lambda: "acme/webdl" in d.find_element(By.ID, "library").text, what="the model in the library")
    row = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#library tbody tr") if "acme/webdl" in r.text]
    assert row and "tiny-qwen2.gguf" in row[0], row
    d.save_screenshot(str(shots / "library-download.png"))


def test_download_errors_in_the_view(hub_server, browser, shots):
    base, port, _ = hub_server
    d = browser
    d.get(base + "/#/library")
    wait(d, lambda: d.find_element(By.ID, "dl-form").is_displayed(), what="the download form")
    n_jobs = len(json.loads(http_get(port, "/downloads")[2])["downloads"])
    st, want = http_post_json(port, "/downloads", {"repo": "not-a-repo"})  # what the server says to it
    assert st == 400 and want["error"]["message"]
    box = d.find_element(By.ID, "dl-repo")
    box.send_keys("not-a-repo", Keys.ENTER)
    wait(d, lambda: d.find_element(By.ID, "dl-error").is_displayed(), what="the error in the view")
    shown = d.find_element(By.ID, "dl-error").text
    assert want["error"]["message"] in shown, shown
    assert d.find_element(By.ID, "dl-error").get_attribute("role") == "alert"
    assert box.get_attribute("value") == "not-a-repo"  # kept for fixing
    assert len(json.loads(http_get(port, "/downloads")[2])["downloads"]) == n_jobs
    # the refused POST is chromium's one console error here (a network entry); nothing else
    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert len(bad) == 1 and "/downloads" in bad[0]["message"] and "400" in bad[0]["message"], bad
    # a repo the hub does not have: the job fails, and its error shows in the list
    box.clear()
    box.send_keys("acme/absent", Keys.ENTER)
    wait(d, lambda: not d.find_element(By.ID, "dl-error").is_displayed(), what="the old error cleared")
    wait(d, lambda: any(j["state"] == "failed" for j in jobs_in_view(d)), timeout=20, what="a failed job")
    job = next(j for j in jobs_in_view(d) if j["state"] == "failed")
    server_job = next(j for j in json.loads(http_get(port, "/downloads")[2])["downloads"] if j["id"] == job["id"])
    assert server_job["error"] and server_job["error"] in job["error"], (job, server_job)
    d.save_screenshot(str(shots / "library-download-error.png"))


# ---------- the adapter picker ----------

ADAPTER = ROOT / "tests" / "golden" / "lora" / "smollm2-lora.gguf"
PROMPT = "Write one sentence about the sea."


@pytest.fixture(scope="module")
def lora_server():
    """(base URL, port): SmolLM2 with the GGUF LoRA of tools/make_lora_gguf.py mounted as the default."""
    proc, port, log = start_server("--no-open", "--adapter", str(ADAPTER))
    yield f"http://127.0.0.1:{port}", port
    stop_server(proc)
    os.unlink(log)


def api_reply(port, **extra):
    """The greedy reply to PROMPT through the API, with the fields the page sends."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        body = {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0, "top_p": 1.0,
                "max_tokens": 12, **extra}
        c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out = json.loads(r.read())
        assert r.status == 200, out
        return out["choices"][0]["message"]["content"]
    finally:
        c.close()


def page_reply(d):
    """Send PROMPT from the composer; the finished reply's meta line, its content as stored, and the
    body the page POSTed (read through a wrapper around the page's fetch)."""
    js(d, "if(!window.__bodies){window.__bodies=[];const f=window.fetch;window.fetch=(u,o)=>{"
          "if(String(u).endsWith('/v1/chat/completions'))window.__bodies.push(JSON.parse(o.body));return f(u,o);};}")
    d.find_element(By.ID, "input").send_keys(PROMPT, Keys.ENTER)
    wait(d, lambda: (last_reply(d) or {}).get("pending") is False and "tok/s" in last_reply(d)["meta"], timeout=30,
         what="the reply")
    r = last_reply(d)
    assert not r["error"], r["error"]
    stored = js(d, "const c=JSON.parse(localStorage.getItem('hearth.convs.v1')).find(c=>c.id===localStorage"
                   ".getItem('hearth.current')); return c.messages[c.messages.length-1].content;")
    return r["meta"], stored, js(d, "return window.__bodies[window.__bodies.length-1]")


def test_adapter_picker(lora_server, browser, shots):
    from selenium.webdriver.support.ui import Select
    base, port = lora_server
    d = browser
    mounted = json.loads(http_get(port, "/v1/adapters")[2])["data"]
    assert len(mounted) == 1 and mounted[0]["default"] is True, mounted
    aid = mounted[0]["id"]
    with_adapter, without = api_reply(port, adapter=aid), api_reply(port, adapter="none")
    assert with_adapter != without, "the adapter does not change this reply: the test could not tell"
    d.get(base + "/#/chat")
    js(d, "localStorage.clear()")
    d.refresh()
    wait(d, lambda: d.find_element(By.ID, "adapter-wrap").is_displayed(), what="the adapter picker")
    sel = Select(d.find_element(By.ID, "adapter-sel"))
    assert [(o.get_attribute("value"), o.text) for o in sel.options] == [
        ("none", "none (base model)"), (aid, aid + " (default)")]
    assert sel.first_selected_option.get_attribute("value") == aid  # the server's default
    set_sampling(d, max_tokens=12, temperature=0)
    # the default: the page sends no field, the server applies its default adapter
    meta, text, sent = page_reply(d)
    assert "adapter " + aid in meta and text == with_adapter, (meta, text, with_adapter)
    assert "adapter" not in sent, sent
    # "none" in a new conversation: the base model's reply
    d.find_element(By.ID, "new-chat").click()
    Select(d.find_element(By.ID, "adapter-sel")).select_by_value("none")
    meta, text, sent = page_reply(d)
    assert "base model" in meta and text == without, (meta, text, without)
    assert sent["adapter"] == "none", sent
    d.save_screenshot(str(shots / "chat-adapter.png"))
    # the pick belongs to the conversation: after a reload each shows its own
    d.refresh()
    wait(d, lambda: d.find_element(By.ID, "adapter-wrap").is_displayed(), what="the picker after a reload")
    assert Select(d.find_element(By.ID, "adapter-sel")).first_selected_option.get_attribute("value") == "none"
    d.find_elements(By.CSS_SELECTOR, "#conv-list .conv-open")[1].click()  # the older conversation
    assert Select(d.find_element(By.ID, "adapter-sel")).first_selected_option.get_attribute("value") == aid
    # an explicit pick of the adapter is sent as the request's `adapter`
    Select(d.find_element(By.ID, "adapter-sel")).select_by_value("none")
    Select(d.find_element(By.ID, "adapter-sel")).select_by_value(aid)
    meta, _, sent = page_reply(d)
    assert "adapter " + aid in meta and sent["adapter"] == aid, (meta, sent)


# ---------- images for a model with a vision tower ----------

def noise_png(path, w, h, seed=1):
    """A PNG of pseudo-random pixels, stored uncompressed (so its size is about 3*w*h bytes)."""
    import random
    import struct
    import zlib
    rnd = random.Random(seed)
    raw = b"".join(b"\x00" + rnd.randbytes(3 * w) for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                     chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))
    return path


@pytest.fixture(scope="module")
def vision_server(tmp_path_factory):
    """(base URL, port): SmolLM2 with a llama.cpp-style projector GGUF beside it, which the store
    calls a model with a vision tower (tests/e2e/vision_fixture.py)."""
    from vision_fixture import seeing_gguf
    model = seeing_gguf(tmp_path_factory.mktemp("webseer"), MODEL)
    proc, port, log = start_server("--no-open", model=str(model))
    yield f"http://127.0.0.1:{port}", port
    stop_server(proc)
    os.unlink(log)


def attach_state(d):
    return js(d, "return {button: !document.getElementById('attach').hidden,"
                 " n: document.querySelectorAll('#attachments .att').length,"
                 " shown: !document.getElementById('attachments').hidden,"
                 " error: document.getElementById('attach-error').hidden ? '' :"
                 " document.getElementById('attach-error').textContent};")


# A File in the page from base64 bytes, then a drop on the chat view or a paste into the box.
DROP_JS = """const [b64, name, type, how] = arguments;
const bin = atob(b64), u = new Uint8Array(bin.length);
for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
const dt = new DataTransfer();
dt.items.add(new File([u], name, {type}));
if (how === 'drop') {
  const v = document.getElementById('view-chat');
  v.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true, cancelable: true}));
  v.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
} else {
  document.getElementById('input').dispatchEvent(
    new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true}));
}"""


def test_no_attach_for_a_text_model(server, browser):
    """A text-only model (its /v1/models entry has no "vision"): no attach control, and images
    dropped on the chat or pasted into the box are ignored."""
    import base64
    from test_server_media import png_bytes
    base, port = server
    d = browser
    caps = json.loads(http_get(port, "/v1/models")[2])["data"][0]["capabilities"]
    assert caps == ["text"], caps
    d.get(base + "/#/chat")
    wait(d, lambda: js(d, "return app.models.length") > 0, what="the model list")
    png = base64.b64encode(png_bytes()).decode()
    js(d, DROP_JS, png, "a.png", "image/png", "drop")
    js(d, DROP_JS, png, "b.png", "image/png", "paste")
    st = attach_state(d)
    assert st == {"button": False, "n": 0, "shown": False, "error": ""}, st


def test_attach_images_to_a_vision_model(vision_server, browser, shots, tmp_path):
    import base64
    from test_server_media import png_bytes
    base, port = vision_server
    d = browser
    cfg = json.loads(http_get(port, "/v1/app/config")[2])["media"]
    assert cfg == {"max_bytes": 64 << 20, "max_body_bytes": 8 << 20}, cfg
    d.get(base + "/")
    js(d, "localStorage.clear()")
    d.get(base + "/#/chat")
    wait(d, lambda: attach_state(d)["button"], what="the attach button")
    set_sampling(d, max_tokens=4, temperature=0)
    # the button opens the file picker; a picked file becomes a thumbnail in the composer
    js(d, "window.__picked=0; document.getElementById('attach-file').addEventListener('click',"
          " (e) => { window.__picked++; e.preventDefault(); });")
    d.find_element(By.ID, "attach").click()
    assert js(d, "return window.__picked") == 1
    one = tmp_path / "one.png"
    one.write_bytes(png_bytes(3, 2))
    js(d, "document.getElementById('attach-file').hidden = false")
    d.find_element(By.ID, "attach-file").send_keys(str(one))
    js(d, "document.getElementById('attach-file').hidden = true")
    wait(d, lambda: attach_state(d)["n"] == 1, what="the picked image")
    # a drop and a paste add theirs; a non-image and an image over the server's cap are refused
    two = base64.b64encode(png_bytes(2, 2)).decode()
    js(d, DROP_JS, two, "two.png", "image/png", "drop")
    wait(d, lambda: attach_state(d)["n"] == 2, what="the dropped image")
    js(d, DROP_JS, two, "three.png", "image/png", "paste")
    wait(d, lambda: attach_state(d)["n"] == 3, what="the pasted image")
    js(d, DROP_JS, base64.b64encode(b"just text").decode(), "notes.txt", "text/plain", "drop")
    wait(d, lambda: "notes.txt is not a PNG, JPEG or WebP image" in attach_state(d)["error"], what="the type refusal")
    js(d, "const f = new File([new Uint8Array((64 << 20) + 1)], 'huge.png', {type: 'image/png'});"
          "addFiles([f]);")
    wait(d, lambda: "huge.png is" in attach_state(d)["error"], what="the size refusal")
    err = attach_state(d)["error"]
    assert "the server takes images of up to " + js(d, "return fmtBytes(arguments[0])", 64 << 20) in err, err
    assert js(d, "return document.getElementById('attach-error').getAttribute('role')") == "alert"
    assert attach_state(d)["n"] == 3
    d.find_elements(By.CSS_SELECTOR, "#attachments .att-rm")[2].click()  # the pasted one goes again
    assert attach_state(d)["n"] == 2
    d.save_screenshot(str(shots / "chat-attach.png"))
    # sent as image_url data: URL parts after the text, in order; thumbnails in the message
    record_requests(d)
    d.find_element(By.ID, "input").send_keys("What is in these pictures?", Keys.ENTER)
    wait(d, lambda: (last_reply(d) or {}).get("pending") is False, timeout=30, what="the answer")
    sent = js(d, "return window.__sent")
    assert len(sent) == 1, sent
    parts = sent[0]["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "What is in these pictures?"}, parts[0]
    assert [p["type"] for p in parts[1:]] == ["image_url", "image_url"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(one.read_bytes()).decode()
    assert parts[2]["image_url"]["url"] == "data:image/png;base64," + two
    assert js(d, "return document.querySelectorAll('.msg.user .msg-images img').length") == 2
    assert attach_state(d)["n"] == 0 and not attach_state(d)["shown"]
    # the server's refusal (it cannot run the tower yet) shows under the reply, with its message
    body = dict(sent[0], stream=False)
    body.pop("stream_options", None)
    st, want = http_post_json(port, "/v1/chat/completions", body)
    assert st == 400 and "vision tower" in want["error"]["message"], want
    r = last_reply(d)
    assert want["error"]["message"] in r["error"] and "HTTP 400" in r["error"], r
    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert len(bad) == 1 and "/v1/chat/completions" in bad[0]["message"] and "400" in bad[0]["message"], bad
    d.save_screenshot(str(shots / "chat-attach-refused.png"))
    # an image whose request would pass the server's body cap is stopped here, nothing sent
    big = noise_png(tmp_path / "big.png", 1500, 1500)  # 6.75 MB: about 9 MB as base64
    js(d, "document.getElementById('attach-file').hidden = false")
    d.find_element(By.ID, "attach-file").send_keys(str(big))
    js(d, "document.getElementById('attach-file').hidden = true")
    wait(d, lambda: attach_state(d)["n"] == 1, timeout=20, what="the big image")
    d.find_element(By.ID, "input").send_keys("And this?", Keys.ENTER)
    wait(d, lambda: "the server takes requests of up to" in ((last_reply(d) or {}).get("error") or ""),
         what="the body-size refusal")
    assert len(js(d, "return window.__sent")) == 1  # no second request
    # after a reload the messages keep their thumbnails, but not the images
    d.refresh()
    wait(d, lambda: js(d, "return document.querySelectorAll('.msg.user .msg-images img').length") == 3,
         what="the thumbnails after a reload")
    title = js(d, "return document.querySelector('.msg.user .msg-images img').title")
    assert "not sent again" in title, title
    stored = js(d, "return localStorage.getItem('hearth.convs.v1')")
    assert "data:image/png" not in stored and "data:image/jpeg" in stored


# ---------- `hearth serve` opens the browser ----------

def test_opens_the_chat_with_xdg_open(tmp_path):
    """With stdout on a terminal and a display set, hearth runs xdg-open on the chat URL; with
    --no-open, or without xdg-open on PATH, it starts just the same and opens nothing."""
    marker = tmp_path / "opened"
    fake = tmp_path / "bin" / "xdg-open"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {marker}\n")
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:{os.environ.get('PATH', '')}", "DISPLAY": ":99"}
    for args, want in ((["--no-open"], False), ([], True)):
        master, slave = pty.openpty()
        proc, port, log = start_server(*args, env=env, stdout=slave)
        try:
            deadline = time.monotonic() + (5 if want else 1)
            while time.monotonic() < deadline and not marker.exists():
                time.sleep(0.02)
            if want:
                assert marker.exists(), "xdg-open was not run"
                assert marker.read_text() == f"http://127.0.0.1:{port}/#/chat"
            else:
                assert not marker.exists()
        finally:
            stop_server(proc)
            os.close(master)
            os.close(slave)
            os.unlink(log)
    # No xdg-open anywhere: still serves.
    marker.unlink()
    master, slave = pty.openpty()
    proc, port, log = start_server(env={"PATH": "/nonexistent", "DISPLAY": ":99"}, stdout=slave)
    try:
        assert http_get(port, "/health")[0] == 200
    finally:
        stop_server(proc)
        os.close(master)
        os.close(slave)
        os.unlink(log)


# ---------- the model picker and "Chat with this model" (a model pool) ----------

@pytest.fixture(scope="module")
def pool_server(tmp_path_factory):
    """(base URL, port): `serve --isolate --model-pool 2` over a store of two chat models,
    test/smol and test/other (SmolLM2 under a second id: a model of its own to the pool, with a
    projector GGUF beside it, so the store gives it a vision tower)."""
    tmp = tmp_path_factory.mktemp("webpool")
    for repo in ("test/smol", "test/other"):
        org, name = repo.split("/")
        snap = tmp / "hub" / f"models--{org}--{name}" / "snapshots" / "r1"
        snap.mkdir(parents=True)
        (snap.parent.parent / "refs").mkdir()
        (snap.parent.parent / "refs" / "main").write_text("r1")
        (snap / pathlib.Path(MODEL).name).symlink_to(pathlib.Path(MODEL).resolve())
        if repo == "test/other":  # a projector beside it: the store says it can see
            from vision_fixture import write_projector
            write_projector(snap / "mmproj-model-f16.gguf")
    env = {"HF_HUB_CACHE": str(tmp / "hub"), "XDG_CACHE_HOME": str(tmp / "xdg")}
    proc, port, log = start_server("--no-open", "--isolate", "--model-pool", "2", env=env, model="test/smol",
                                   timeout=60)
    yield f"http://127.0.0.1:{port}", port
    stop_server(proc)
    os.unlink(log)


def api_models(port):
    return {m["id"]: m.get("loaded") for m in json.loads(http_get(port, "/v1/models")[2])["data"]}


def picker(d):
    return js(d, "const s=document.getElementById('model-pick'); return {shown: !document.getElementById("
                 "'model-pick-wrap').hidden, value: s.value, options: [...s.options].map(o => [o.value, o.text])};")


def record_requests(d):
    """From now on the page keeps the body of every POST /v1/chat/completions it sends."""
    js(d, "window.__sent=[]; const f=window.fetch; window.fetch=function(u,o){"
          "if(String(u).endsWith('/v1/chat/completions')&&o&&o.body) __sent.push(JSON.parse(o.body));"
          "return f.apply(this, arguments);};")


def send_and_wait(d, text):
    d.find_element(By.ID, "input").send_keys(text, Keys.ENTER)
    wait(d, lambda: (last_reply(d) or {}).get("pending") is False and "tok/s" in last_reply(d)["meta"],
         timeout=45, what="the reply")
    r = last_reply(d)
    assert not r["error"], r["error"]
    return r


def test_model_picker_sends_the_chosen_model(pool_server, browser, shots):
    base, port = pool_server
    d = browser
    d.get(base + "/")
    js(d, "localStorage.clear()")
    d.get(base + "/#/chat")
    wait(d, lambda: picker(d)["shown"], what="the model picker")
    # the picker lists /v1/models, loaded or not, the served model chosen
    want = api_models(port)
    assert want == {"test/smol": True, "test/other": False}
    p = picker(d)
    assert [v for v, _ in p["options"]] == list(want) and p["value"] == "test/smol", p
    assert dict(p["options"]) == {"test/smol": "test/smol \u00b7 loaded", "test/other": "test/other \u00b7 not loaded"}
    set_sampling(d, max_tokens=8, temperature=0)
    record_requests(d)
    from selenium.webdriver.support.ui import Select
    Select(d.find_element(By.ID, "model-pick")).select_by_value("test/other")
    assert "test/other" in d.find_element(By.ID, "messages").text  # "Chat with test/other"
    r = send_and_wait(d, "Name a color.")
    sent = js(d, "return window.__sent")
    assert [b["model"] for b in sent] == ["test/other"], sent
    # the server started that model's engine for it, and the picker says so
    assert api_models(port) == {"test/smol": True, "test/other": True}
    wait(d, lambda: dict(picker(d)["options"])["test/other"].endswith("\u00b7 loaded"), what="the picker refreshed")
    # the reply is that model's own answer to the same request
    body = dict(sent[0], stream=False)
    body.pop("stream_options", None)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        ref = json.loads(c.getresponse().read())
    finally:
        c.close()
    assert ref["model"] == "test/other" and ref["choices"][0]["message"]["content"].strip() == r["text"].strip()
    # the choice is kept across a reload
    d.refresh()
    wait(d, lambda: picker(d)["shown"] and picker(d)["value"] == "test/other", what="the choice after a reload")
    d.save_screenshot(str(shots / "chat-model-picker.png"))


def test_library_chat_with_this_model(pool_server, browser, shots):
    base, port = pool_server
    d = browser
    d.get(base + "/#/library")
    wait(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#library .chat-with")) == 2, what="the library's actions")
    labels = sorted(b.get_attribute("aria-label") for b in d.find_elements(By.CSS_SELECTOR, "#library .chat-with"))
    assert labels == ["Chat with test/other", "Chat with test/smol"], labels
    d.save_screenshot(str(shots / "library-pool.png"))
    d.find_element(By.CSS_SELECTOR, "#library .chat-with[aria-label='Chat with test/smol']").click()
    wait(d, lambda: d.current_url.endswith("#/chat"), what="the chat view")
    wait(d, lambda: picker(d)["value"] == "test/smol", what="the picked model")
    assert not d.find_elements(By.CSS_SELECTOR, ".msg")  # a fresh conversation
    record_requests(d)
    send_and_wait(d, "Name a fruit.")
    assert [b["model"] for b in js(d, "return window.__sent")] == ["test/smol"]


def test_attach_follows_the_picked_model(pool_server, browser):
    """In a pool, /v1/models marks each model's capabilities from the store, and the attach
    control follows the picked model: shown for test/other (a projector beside it), hidden for
    test/smol, whose pending images are dropped."""
    import base64
    from selenium.webdriver.support.ui import Select
    from test_server_media import png_bytes
    base, port = pool_server
    caps = {m["id"]: m["capabilities"] for m in json.loads(http_get(port, "/v1/models")[2])["data"]}
    assert caps == {"test/smol": ["text"], "test/other": ["text", "vision"]}, caps
    assert json.loads(http_get(port, "/v1/models/test/other")[2])["capabilities"] == ["text", "vision"]
    assert json.loads(http_get(port, "/v1/models/test/smol")[2])["capabilities"] == ["text"]
    d = browser
    d.get(base + "/#/chat")
    wait(d, lambda: picker(d)["shown"], what="the model picker")
    Select(d.find_element(By.ID, "model-pick")).select_by_value("test/other")
    wait(d, lambda: attach_state(d)["button"], what="the attach button for test/other")
    js(d, DROP_JS, base64.b64encode(png_bytes()).decode(), "a.png", "image/png", "drop")
    wait(d, lambda: attach_state(d)["n"] == 1, what="the dropped image")
    Select(d.find_element(By.ID, "model-pick")).select_by_value("test/smol")
    st = attach_state(d)
    assert st["button"] is False and st["n"] == 0 and st["shown"] is False, st
