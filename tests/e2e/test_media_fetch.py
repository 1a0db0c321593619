"""The guarded media fetcher (src/server/media_fetch.h) end to end, through the diagnostic
`hearth fetch-media`, which runs the same fetch a request's image or audio URL gets and prints
the HTTP status such a request would be answered with.

A loopback HTTP server (Python's http.server in a thread) plays the remote host. Without
--allow-private-media it cannot be reached at all (loopback is blocked); the test-only flag
--media-test-allow-addr 127.0.0.1 lets it play a public host, so its redirects to private and
loopback addresses show that each hop is checked again. Literal URLs of every blocked address
class are refused before any connection is tried.
"""
import http.server
import struct
import threading
import time
import zlib

import pytest

PNG = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0) +
       struct.pack(">I", zlib.crc32(b"IHDR" + struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) & 0xFFFFFFFF))
BIG = PNG + b"\0" * 4000


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, body, ctype="image/png", length=True):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, to):
        self.send_response(302)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        port = self.server.server_address[1]
        p = self.path
        if p == "/a.png":
            self.send(PNG)
        elif p == "/html-said-png":  # a header that lies: the bytes decide
            self.send(b"<html>not an image</html>", "image/png")
        elif p == "/big":
            self.send(BIG)
        elif p == "/big-no-length":  # no Content-Length: only the write callback can stop it
            self.close_connection = True
            self.send(BIG, length=False)
        elif p == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", str(len(PNG) + 100))
            self.end_headers()
            self.wfile.write(PNG)
            self.wfile.flush()
            time.sleep(3)
        elif p == "/to-a":
            self.redirect("/a.png")  # relative: resolved against this URL
        elif p == "/to-metadata":
            self.redirect("http://169.254.169.254/latest/meta-data/")
        elif p == "/to-private":
            self.redirect("http://10.0.0.7/x.png")
        elif p == "/to-loopback6":
            self.redirect(f"http://[::1]:{port}/a.png")
        elif p == "/to-mapped":
            self.redirect(f"http://[::ffff:127.0.0.2]:{port}/a.png")
        elif p == "/to-ftp":
            self.redirect("ftp://example.com/a.png")
        elif p == "/spin":
            self.redirect("/spin")
        elif p.startswith("/hop"):  # /hopN: N more redirects, then the image
            n = int(p[4:])
            self.redirect(f"/hop{n - 1}" if n > 0 else "/a.png")
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.fixture(scope="module")
def origin():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def fetch(hearth, *args):
    r = hearth("fetch-media", *args, timeout=60)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def refused(hearth, *args, words=()):
    rc, out, err = fetch(hearth, *args)
    assert rc == 1 and out == "" and "fetch-media: 400:" in err, (args, rc, out, err)
    for w in words:
        assert w in err, (args, err)
    return err


def test_loopback_refused_by_default_allowed_with_flag(hearth, origin):
    refused(hearth, origin + "/a.png", words=("127.0.0.1", "loopback", "--allow-private-media"))
    refused(hearth, origin.replace("127.0.0.1", "localhost") + "/a.png", words=("loopback",))
    rc, out, err = fetch(hearth, "--allow-private-media", origin + "/a.png")
    assert rc == 0 and out == f"image/png {len(PNG)} bytes, 0 redirects", err
    rc, out, err = fetch(hearth, "--allow-private-media", origin + "/to-a")
    assert rc == 0 and out == f"image/png {len(PNG)} bytes, 1 redirects", err


@pytest.mark.parametrize("host,cls", [
    ("10.1.2.3", "private"), ("172.16.5.4", "private"), ("192.168.0.1", "private"), ("100.64.1.1", "private"),
    ("[fd00::1]", "private"), ("127.0.0.1", "loopback"), ("127.9.9.9", "loopback"), ("[::1]", "loopback"),
    ("169.254.169.254", "link-local"), ("[fe80::1]", "link-local"), ("0.0.0.0", "unspecified"),
    ("[::]", "unspecified"), ("224.0.0.251", "multicast"), ("[ff02::1]", "multicast"),
    ("255.255.255.255", "broadcast"), ("[::ffff:127.0.0.1]", "loopback"), ("[::ffff:169.254.169.254]", "link-local"),
    ("[::ffff:10.0.0.1]", "private"), ("[64:ff9b::7f00:1]", "loopback"), ("[64:ff9b::a9fe:a9fe]", "link-local"),
    ("[2002:7f00:1::]", "loopback"), ("2130706433", "loopback"), ("0x7f.1", "loopback"),
])
def test_every_blocked_class_refused(hearth, host, cls):
    refused(hearth, f"http://{host}:9/x.png", words=(f"a {cls} address",))


def test_redirects_checked_hop_by_hop(hearth, origin):
    allow = ("--media-test-allow-addr", "127.0.0.1")
    rc, out, err = fetch(hearth, *allow, origin + "/to-a")
    assert rc == 0 and "1 redirects" in out, err
    refused(hearth, *allow, origin + "/to-metadata", words=("169.254.169.254", "link-local"))
    refused(hearth, *allow, origin + "/to-private", words=("10.0.0.7", "private"))
    refused(hearth, *allow, origin + "/to-loopback6", words=("::1", "loopback"))
    refused(hearth, *allow, origin + "/to-mapped", words=("::ffff:127.0.0.2", "loopback"))
    refused(hearth, *allow, origin + "/to-ftp", words=("only http and https",))
    refused(hearth, *allow, origin + "/spin", words=("more than 5 redirects",))
    rc, out, err = fetch(hearth, *allow, origin + "/hop4")  # five redirects: the most allowed
    assert rc == 0 and "5 redirects" in out, err
    refused(hearth, *allow, origin + "/hop5", words=("more than 5 redirects",))


def test_oversized_body_refused_while_streaming(hearth, origin):
    cap = ("--allow-private-media", "--media-max-bytes", "1000")
    refused(hearth, *cap, origin + "/big", words=("1000-byte cap",))
    refused(hearth, *cap, origin + "/big-no-length", words=("1000-byte cap",))
    rc, out, err = fetch(hearth, *cap, origin + "/a.png")  # under the cap: fine
    assert rc == 0, err


def test_slow_body_times_out(hearth, origin):
    t0 = time.monotonic()
    refused(hearth, "--allow-private-media", "--media-timeout-ms", "500", origin + "/slow", words=("500 ms",))
    assert time.monotonic() - t0 < 2.5  # the body would take 3 s; the fetch gave up at 0.5 s


def test_body_type_sniffed_not_trusted(hearth, origin):
    refused(hearth, "--allow-private-media", origin + "/html-said-png", words=("not image data",))
    refused(hearth, "--allow-private-media", "--kind", "audio", origin + "/a.png", words=("not audio data",))
    rc, out, err = fetch(hearth, "--allow-private-media", "--kind", "any", origin + "/a.png")
    assert rc == 0 and out.startswith("image/png"), err
    refused(hearth, "--allow-private-media", origin + "/missing", words=("HTTP 404",))


def test_bad_urls(hearth):
    refused(hearth, "file:///etc/passwd", words=("only http and https",))
    refused(hearth, "http://user:pw@example.com/a.png", words=("user name",))
    refused(hearth, "http://", words=("not a valid URL",))
    rc, _, err = fetch(hearth, "--media-test-allow-addr", "localhost", "http://x/")
    assert rc == 2 and "literal" in err
