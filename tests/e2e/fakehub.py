"""A loopback stand-in for the Hugging Face hub, for the `hearth get` end-to-end tests.

It speaks the subset hearth uses, with the hub's headers:

  GET /api/models/{repo}/revision/{rev}?blobs=true
      {"sha": commit, "siblings": [{"rfilename", "blobId", "size", "lfs": {"sha256", "size"}}]}
  GET /{repo}/resolve/{rev}/{path}
      LFS files: 302 to {cdn}/cdn/{sha256} (another port) with X-Repo-Commit, X-Linked-Etag, X-Linked-Size
      small files: 200 with ETag = the git blob id and X-Repo-Commit; Range honoured
  GET /cdn/{sha256}
      the bytes, with Range (206 + Content-Range) unless a fault says otherwise

Gated repos answer 401 without `Authorization: Bearer <token>` (gated="files": only the
downloads do, the file list is public, as on the hub). Faults are set per file path
(FakeHub.faults[path] = {...}): "cut" (close the connection after N bytes, `times` times),
"corrupt" (flip one byte), "extra" (send N bytes more than the file), "short" (serve only the
first N bytes, with a Content-Length that matches them), "ignore_range", "throttle" (bytes per
second), "wrong_commit". Every request is logged in FakeHub.log as a dict.

Serves on 127.0.0.1 only, on an ephemeral port, with daemon threads and socket timeouts, so a
test that forgets to stop it cannot hang the suite.
"""
import hashlib
import json
import random
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def random_bytes(n, seed):
    return random.Random(seed).randbytes(n)


class Repo:
    def __init__(self, repo_id, files, commit, gated, lfs_min):
        self.repo_id = repo_id
        self.files = dict(files)  # path -> bytes
        self.commit = commit
        self.refs = {"main": commit}
        self.gated = gated
        self.lfs = {p for p, d in self.files.items() if len(d) >= lfs_min or p.endswith(".gguf")}

    def sibling(self, path):
        data = self.files[path]
        s = {"rfilename": path, "blobId": git_blob_id(data), "size": len(data)}
        if path in self.lfs:
            s["lfs"] = {"sha256": sha256(data), "size": len(data), "pointerSize": 134}
        return s


class FakeHub:
    def __init__(self, token="hf_test_token"):
        self.repos = {}
        self.blobs = {}  # sha256 -> (repo, path)
        self.faults = {}
        self.log = []
        self.token = token
        self.active = 0  # CDN transfers in flight
        self.max_active = 0
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 20

            def log_message(self, *args):
                pass

            def do_GET(self):
                try:
                    hub.handle(self)
                except (BrokenPipeError, ConnectionResetError, socket.timeout):
                    self.close_connection = True

            do_HEAD = do_GET

        # the hub and its "CDN" listen on two ports: a redirect to another origin must not
        # carry the hub token along
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(2)]
        for s in self.servers:
            s.daemon_threads = True
        self.threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in self.servers]

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.servers[0].server_address[1]

    @property
    def cdn_url(self):
        return "http://127.0.0.1:%d" % self.servers[1].server_address[1]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()

    def add_repo(self, repo_id, files, commit=None, gated=False, lfs_min=1 << 20):
        commit = commit or hashlib.sha1(repo_id.encode() + repr(sorted(files)).encode()).hexdigest()
        repo = Repo(repo_id, files, commit, gated, lfs_min)
        self.repos[repo_id] = repo
        for p in repo.lfs:
            self.blobs[sha256(repo.files[p])] = (repo, p)
        return repo

    def requests(self, kind=None):
        return [r for r in self.log if kind is None or r["kind"] == kind]

    # ---- the handler ------------------------------------------------------------------------

    def reply(self, h, code, body=b"", headers=None, ctype="application/json"):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def authorized(self, h, repo, api=False):
        if not repo.gated or (api and repo.gated == "files"):
            return True
        return h.headers.get("Authorization") == "Bearer " + self.token

    def handle(self, h):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        entry = {"kind": "?", "path": path, "range": h.headers.get("Range"),
                 "auth": h.headers.get("Authorization")}
        self.log.append(entry)
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and "revision" in parts:
            entry["kind"] = "api"
            i = parts.index("revision")
            return self.api_revision(h, "/".join(parts[2:i]), "/".join(parts[i + 1:]))
        if len(parts) >= 2 and parts[0] == "cdn":
            entry["kind"] = "cdn"
            return self.cdn(h, parts[1])
        if "resolve" in parts:
            entry["kind"] = "resolve"
            i = parts.index("resolve")
            return self.resolve(h, "/".join(parts[:i]), parts[i + 1], "/".join(parts[i + 2:]))
        self.reply(h, 404, b'{"error":"not found"}')

    def find(self, repo_id, rev):
        repo = self.repos.get(repo_id)
        if repo is None:
            return None, None
        commit = repo.refs.get(rev, rev if rev == repo.commit else None)
        return repo, commit

    def api_revision(self, h, repo_id, rev):
        repo, commit = self.find(repo_id, rev)
        if repo is None:
            return self.reply(h, 404, b'{"error":"Repository not found"}')
        if not self.authorized(h, repo, api=True):
            return self.reply(h, 401, b'{"error":"Access to this repo is restricted"}')
        if commit is None:
            return self.reply(h, 404, b'{"error":"Invalid rev id"}')
        body = {"_id": "x", "id": repo_id, "sha": commit,
                "siblings": [repo.sibling(p) for p in sorted(repo.files)]}
        self.reply(h, 200, json.dumps(body).encode())

    def resolve(self, h, repo_id, rev, fpath):
        repo, commit = self.find(repo_id, rev)
        if repo is None or commit is None or fpath not in repo.files:
            return self.reply(h, 404, b'{"error":"Entry not found"}')
        if not self.authorized(h, repo):
            return self.reply(h, 401, b'{"error":"Access to this repo is restricted"}')
        data = repo.files[fpath]
        fault = self.faults.get(fpath, {})
        served_commit = "f" * 40 if fault.get("wrong_commit") else commit
        if fpath in repo.lfs:
            headers = {"Location": "%s/cdn/%s?file=%s" % (self.cdn_url, sha256(data), urllib.parse.quote(fpath)),
                       "X-Repo-Commit": served_commit, "X-Linked-Etag": '"%s"' % sha256(data),
                       "X-Linked-Size": str(len(data)), "ETag": '"%s"' % git_blob_id(b"pointer")}
            return self.reply(h, 302, b"", headers)
        self.send_bytes(h, data, fault, {"ETag": '"%s"' % git_blob_id(data), "X-Repo-Commit": served_commit})

    def cdn(self, h, sha):
        if sha not in self.blobs:
            return self.reply(h, 404, b"")
        if h.headers.get("Authorization"):
            self.log[-1]["leak"] = True  # a token must never reach the CDN
        repo, fpath = self.blobs[sha]
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.send_bytes(h, repo.files[fpath], self.faults.get(fpath, {}), {"ETag": '"%s"' % sha})
        finally:
            with self.lock:
                self.active -= 1

    def send_bytes(self, h, data, fault, headers):
        if fault.get("corrupt"):
            data = bytearray(data)
            data[len(data) // 2] ^= 0x55
            data = bytes(data)
        if fault.get("extra"):
            data = data + b"\0" * fault["extra"]
        if fault.get("short"):
            data = data[: fault["short"]]
        start = 0
        rng = h.headers.get("Range")
        code = 200
        if rng and not fault.get("ignore_range"):
            spec = rng.split("=", 1)[1]
            a, _, b = spec.partition("-")
            start = int(a)
            end = int(b) if b else len(data) - 1
            if start >= len(data):
                return self.reply(h, 416, b"", {"Content-Range": "bytes */%d" % len(data)})
            data_out = data[start: end + 1]
            code = 206
            headers = dict(headers, **{"Content-Range": "bytes %d-%d/%d" % (start, start + len(data_out) - 1,
                                                                               len(data))})
        else:
            data_out = data
        h.send_response(code)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(data_out)))
        h.send_header("Accept-Ranges", "bytes")
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        if h.command == "HEAD":
            return
        cut = fault.get("cut")
        if cut is not None and fault.get("times", 1) > 0:
            fault["times"] = fault.get("times", 1) - 1
            n = max(0, cut - start)
            h.wfile.write(data_out[:n])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        rate = fault.get("throttle")
        if rate:
            step = max(1, rate // 20)
            for i in range(0, len(data_out), step):
                h.wfile.write(data_out[i: i + step])
                h.wfile.flush()
                time.sleep(step / rate)
            return
        h.wfile.write(data_out)
