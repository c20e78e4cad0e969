"""A stand-in SwanLab server for the login path (tests/sim): what `swanlab.login(api_key, host)` calls.

swanlab 0.10.3 logs in with one request, POST <host>/api/login/api_key with the key in the
`authorization` header, and expects {"sid", "expiredAt", "userInfo": {"name", "username"}}. This
server answers that for one key, which it knows only by its SHA-256 (so that neither its arguments
nor its files hold the key), and 401 for any other. Every request is logged, one line each, as
"<method> <path> <status>" (never the header).

    python3 stand_in_swanlab_server.py --port 18000 --key-sha256 <hex> --log /var/log/sim-swanlab.log
"""
from __future__ import annotations

import argparse
import hashlib
import json
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handler_for(key_sha256, log_path):
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with open(log_path, "a", encoding="utf-8") as log:
                log.write("%s %s %d\n" % (self.command, self.path, status))

        def do_POST(self):  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if self.path.rstrip("/") != "/api/login/api_key":
                self._answer(404, {"message": "the stand-in server only knows /api/login/api_key"})
                return
            given = (self.headers.get("authorization") or "").encode()
            if hashlib.sha256(given).hexdigest() != key_sha256:
                self._answer(401, {"message": "Authorization Required"})
                return
            expires = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            self._answer(200, {"sid": "sim-session", "expiredAt": expires, "userInfo": {"name": "Sim", "username": "sim"}})

        def do_GET(self):  # noqa: N802
            self._answer(404, {"message": "not found"})

        def log_message(self, *_args):  # the request line goes to our own log only
            return

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key-sha256", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    ThreadingHTTPServer(("0.0.0.0", args.port), handler_for(args.key_sha256.lower(), args.log)).serve_forever()


if __name__ == "__main__":
    main()
