"""A stand-in SwanLab server (tests/sim): what swanlab 0.10.3's `swanlab.login`, `swanlab.init(mode="cloud")` and
`swanlab.finish()` call, read in that SDK's own source (swanlab/sdk/internal/pkg/client, .../core_python/api).

- Login: POST /api/login/api_key with the key in the `authorization` header; the SDK expects {"sid", "expiredAt",
  "userInfo": {"name", "username"}} and sends the sid back as a cookie on every later request.
- A run (`swanlab.init`): GET /api/project/<workspace>/<project> (404 when there is none), then POST
  /api/projects/<workspace> {"name", "visibility"} to create it and GET it again; then POST
  /api/project/<workspace>/<project>/experiment {"name", "cuid", ...} (201: a new run). While it runs: POST
  /api/house/experiments/<cuid>/heartbeat, PUT .../runs/<cuid>/profile (config, metadata, requirements), POST
  /api/projects/<workspace>/<project>/series and /api/house/metrics.
- `swanlab.finish()`: PUT /api/project/<workspace>/<project>/runs/<cuid>/state {"state": "FINISHED", ...}.
- An error is JSON {"code", "message"}, which the SDK shows as `API Request Failed: [<code>] <message> | Trace ID:
  <traceid header> | <METHOD> <url>`. Without a valid session: 401 {"code": "Unauthorized", "message": "未经授权"}, the
  body a real server sent (SwanHubX/SwanLab#1715).

The key is known only by its SHA-256 (neither the arguments nor the files hold it); any other key gets 401. Every request
is logged, one line each, as "<method> <path> <status>" (never a header or a body).

What a test can make it refuse while it still accepts the login:
- `--forbid-workspace NAME` (repeatable): the key's user may not write to that workspace: no project is visible there
  (GET 404) and creating one or a run there is 403 {"code": "Forbidden", ...}, as SwanLab answered a user without write
  rights (SwanHubX/SwanLab#1771, "SDK侧报403").
- `--old-server`: a server older than the SDK: it lacks the run endpoint the SDK calls (POST .../experiment is 404), as
  self-hosted servers answered SDKs newer than themselves (SwanHubX/self-hosted#13, #85).

    python3 stand_in_swanlab_server.py --port 18000 --key-sha256 <hex> --log /var/log/sim-swanlab.log \
        [--forbid-workspace NAME ...] [--old-server]
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

USERNAME = "sim"
SESSION = "sim-session"
# swanlab 0.10.3 logs in again before every request when the session expires within 7 days (Client.REFRESH_TIME).
SESSION_DAYS = 30
UNAUTHORIZED = {"code": "Unauthorized", "message": "未经授权"}

_PROJECT = re.compile(r"/api/project/(?P<workspace>[^/]+)/(?P<project>[^/]+)")
ROUTES = (
    ("POST", re.compile(r"/api/login/api_key"), "login"),
    ("GET", re.compile(_PROJECT.pattern), "get_project"),
    ("POST", re.compile(r"/api/projects/(?P<workspace>[^/]+)"), "create_project"),
    ("POST", re.compile(_PROJECT.pattern + r"/experiment"), "create_run"),
    ("GET", re.compile(_PROJECT.pattern + r"/runs/(?P<run>[^/]+)"), "get_run"),
    ("PUT", re.compile(_PROJECT.pattern + r"/runs/(?P<run>[^/]+)/state"), "finish_run"),
    ("PUT", re.compile(_PROJECT.pattern + r"/runs/(?P<run>[^/]+)/profile"), "accept"),
    ("POST", re.compile(r"/api/projects/(?P<workspace>[^/]+)/(?P<project>[^/]+)/series"), "accept"),
    ("POST", re.compile(r"/api/house/metrics"), "accept"),
    ("POST", re.compile(r"/api/house/experiments/(?P<run>[^/]+)/heartbeat"), "accept"),
)


class Server:
    """The projects and runs this server holds, and what it refuses."""

    def __init__(self, key_sha256, forbidden_workspaces=(), old_server=False):
        self.key_sha256 = key_sha256.lower()
        self.forbidden = set(forbidden_workspaces)
        self.old_server = old_server
        self.projects = {}  # (workspace, name) -> project
        self.runs = {}  # cuid -> run
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    def project(self, workspace, name):
        found = self.projects.get((workspace, name))
        if found is None:
            return None
        count = sum(1 for run in self.runs.values() if run["project"] == (workspace, name))
        return dict(found, _count={"experiments": count})

    # Each answers (status, body); `fields` are the route's named groups, `body` the request's JSON.
    def login(self, headers, _fields, _body):
        given = (headers.get("authorization") or "").encode()
        if hashlib.sha256(given).hexdigest() != self.key_sha256:
            return 401, {"code": "Unauthorized", "message": "Authorization Required"}
        expires = (datetime.now(timezone.utc) + timedelta(days=SESSION_DAYS)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return 200, {"sid": SESSION, "expiredAt": expires, "userInfo": {"name": "Sim", "username": USERNAME}}

    def get_project(self, _headers, fields, _body):
        found = self.project(fields["workspace"], fields["project"])
        if found is None or fields["workspace"] in self.forbidden:
            return 404, {"code": "NotFound", "message": "project not found"}
        return 200, found

    def create_project(self, _headers, fields, body):
        workspace, name = fields["workspace"], (body or {}).get("name")
        if workspace in self.forbidden:
            return 403, {"code": "Forbidden", "message": "no permission to create a project in workspace %s" % workspace}
        if not name:
            return 400, {"code": "BadRequest", "message": "name is required"}
        if (workspace, name) in self.projects:
            return 200, {}
        self.projects[(workspace, name)] = {"cuid": "p%d" % next(self.ids), "name": name, "path": "/%s/%s" % (workspace, name),
                                            "group": {"username": workspace}, "visibility": body.get("visibility", "PRIVATE")}
        return 201, {}

    def create_run(self, _headers, fields, body):
        workspace, name = fields["workspace"], fields["project"]
        if self.old_server:
            return 404, {"code": 404, "message": "Not Found"}
        if workspace in self.forbidden:
            return 403, {"code": "Forbidden", "message": "no permission to write to workspace %s" % workspace}
        if (workspace, name) not in self.projects:
            return 404, {"code": "NotFound", "message": "project not found"}
        cuid = (body or {}).get("cuid") or "r%d" % next(self.ids)
        if cuid in self.runs:
            return 200, self.runs[cuid]["public"]
        public = {"cuid": cuid, "name": body.get("name"), "slug": cuid, "description": body.get("description")}
        self.runs[cuid] = {"project": (workspace, name), "state": "RUNNING", "public": public}
        return 201, public

    def get_run(self, _headers, fields, _body):
        run = self.runs.get(fields["run"])
        if run is None or run["project"] != (fields["workspace"], fields["project"]):
            return 404, {"code": "NotFound", "message": "experiment not found"}
        return 200, dict(run["public"], state=run["state"])

    def finish_run(self, _headers, fields, body):
        run = self.runs.get(fields["run"])
        if run is None or run["project"] != (fields["workspace"], fields["project"]):
            return 404, {"code": "NotFound", "message": "experiment not found"}
        run["state"] = (body or {}).get("state") or "FINISHED"
        return 200, {}

    @staticmethod
    def accept(_headers, _fields, _body):
        return 200, {}

    def answer(self, method, path, headers, cookies, body):
        """(status, body) for one request."""
        path = path.split("?", 1)[0].rstrip("/")
        for route_method, pattern, name in ROUTES:
            matched = pattern.fullmatch(path)
            if matched and route_method == method:
                if name != "login" and cookies.get("sid") != SESSION:
                    return 401, UNAUTHORIZED
                with self.lock:
                    return getattr(self, name)(headers, matched.groupdict(), body)
        return 404, {"code": "NotFound", "message": "the stand-in server does not know %s %s" % (method, path)}

    def runs_in(self, workspace, project):
        """The runs of a project as (name, state), in creation order."""
        return [(run["public"]["name"], run["state"]) for run in self.runs.values() if run["project"] == (workspace, project)]


def handler_for(server, log_path):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            cookies = dict(part.strip().split("=", 1) for part in (self.headers.get("Cookie") or "").split(";") if "=" in part)
            status, answer = server.answer(self.command, self.path, self.headers, cookies, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("traceid", "sim-%s" % self.command.lower())
            self.end_headers()
            self.wfile.write(data)
            with open(log_path, "a", encoding="utf-8") as log:
                log.write("%s %s %d\n" % (self.command, self.path.split("?", 1)[0], status))

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815 (http.server's naming)

        def log_message(self, *_args):  # the request line goes to our own log only
            return

    return Handler


def serve(server, log_path, port, address="0.0.0.0"):
    """The HTTP server (not yet serving): port 0 takes a free one (server_address[1])."""
    return ThreadingHTTPServer((address, port), handler_for(server, log_path))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key-sha256", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--forbid-workspace", action="append", default=[], help="a workspace the key may not write to")
    parser.add_argument("--old-server", action="store_true", help="lack the run endpoint of swanlab 0.10's protocol")
    args = parser.parse_args()
    serve(Server(args.key_sha256, args.forbid_workspace, args.old_server), args.log, args.port).serve_forever()


if __name__ == "__main__":
    main()
