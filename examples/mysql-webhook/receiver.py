#!/usr/bin/env python3
"""A tiny webhook receiver for sluice, standing in for an application.

It checks X-Sluice-Signature (HMAC-SHA256 of "<t>.<body>" with the shared
secret), refuses stale or forged requests with 401, and is idempotent on the
Idempotency-Key header: a job delivered twice (a retry after a timeout, say)
is applied once, and the second delivery gets the first one's answer.

    HOOK_SECRET=... python3 receiver.py [--port 9000] [--db effects.db]
"""
import argparse
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 300


def verify(secret: bytes, header: str, body: bytes) -> bool:
    pairs = [p.split("=", 1) for p in header.split(",") if "=" in p]
    ts = [v for k, v in pairs if k == "t"]
    if len(ts) != 1 or not ts[0].isdigit() or abs(time.time() - int(ts[0])) > TOLERANCE_S:
        return False
    want = hmac.new(secret, ts[0].encode() + b"." + body, hashlib.sha256).hexdigest()
    # Several v1 values are allowed, so that a secret can be rotated.
    return any(hmac.compare_digest(want, v) for k, v in pairs if k == "v1")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verify(self.server.secret, self.headers.get("X-Sluice-Signature", ""), body):
            return self.reply(401, {"error": "bad signature"})
        key = self.headers.get("Idempotency-Key", "")
        job = json.loads(body)
        db = self.server.db
        with self.server.lock:
            row = db.execute("SELECT answer FROM effects WHERE idempotency_key = ?", (key,)).fetchone()
            if row:  # already applied: answer as before, do nothing again
                return self.reply(200, json.loads(row[0]))
            answer = {"applied": job["type"], "job": job["id"], "attempt": job["attempt"]}
            db.execute("INSERT INTO effects (idempotency_key, path, answer) VALUES (?, ?, ?)",
                       (key, self.path, json.dumps(answer)))
        self.reply(200, answer)

    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--db", default="effects.db")
    args = ap.parse_args()
    secret = os.environ.get("HOOK_SECRET", "")
    if not secret:
        sys.exit("receiver: set HOOK_SECRET")
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.secret = secret.encode()
    srv.lock = threading.Lock()
    srv.db = sqlite3.connect(args.db, check_same_thread=False, isolation_level=None)
    srv.db.execute("PRAGMA journal_mode=WAL")
    srv.db.execute("CREATE TABLE IF NOT EXISTS effects (idempotency_key TEXT PRIMARY KEY, path TEXT, answer TEXT)")
    print(f"receiver: listening on 127.0.0.1:{args.port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
