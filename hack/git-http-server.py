#!/usr/bin/python3
"""Minimal HTTP front end for `git http-backend` (smart HTTP), for tests only.

Why not http.server's CGIHTTPRequestHandler: it only serves under /cgi-bin/ and
ignores chunked request bodies, which libgit2 (git2) and git itself use for pushes.

Usage: git-http-server.py HOST PORT PROJECT_ROOT [--users FILE]
Every URL is handed to git http-backend with GIT_PROJECT_ROOT=PROJECT_ROOT and
GIT_HTTP_EXPORT_ALL=1, so http://HOST:PORT/NAME.git is the bare repo PROJECT_ROOT/NAME.git.

With --users, every request needs HTTP basic auth as one of the FILE's `user:password`
lines (plain text: test users only). The file is read again on each request, so a test
revokes a user by rewriting it; a missing file lets nobody in. The user is handed to
http-backend as REMOTE_USER, which its hooks see (hack/git-reports-hook scopes pushes
with it).

A line may go on, after a space, with grants that restrict the user (a line without any
reaches every repository):
  REPO.git          read and push every ref of that repository (path below the root);
  REPO.git#REF      read and push REF (a full ref name) of it, and no other ref: the
                    others are hidden (transfer.hideRefs, for this request only), so
                    upload-pack neither advertises them nor sends their tips when asked
                    for by id (protocol v0: v2 sends any object asked for), and
                    receive-pack refuses to update them.
A request for a repository the user has no grant for is answered 403.
"""

import argparse
import base64
import hmac

import os
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def git_http_backend():
    exec_path = subprocess.run(
        ["git", "--exec-path"], check=True, capture_output=True, text=True
    ).stdout.strip()
    path = os.path.join(exec_path, "git-http-backend")
    if not os.access(path, os.X_OK):
        sys.exit(f"git-http-backend not found at {path}")
    return path


BACKEND = git_http_backend()


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so Expect: 100-continue (curl, large pushes) is answered; each
    # response closes the connection, which delimits the body (no length needed).
    protocol_version = "HTTP/1.1"
    server_version = "airlock-test-git/1"

    def do_GET(self):
        self.run_backend()

    def do_POST(self):
        self.run_backend()

    def do_HEAD(self):
        self.run_backend()

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def authorized(self):
        """The user the request may go on as ("" without --users); None after answering
        401 itself."""
        if self.server.users_file is None:
            return ""
        try:
            with open(self.server.users_file, encoding="utf-8") as f:
                users = [line.rstrip("\r\n") for line in f if ":" in line]
        except FileNotFoundError:
            users = []
        header = self.headers.get("Authorization", "")
        given = ""
        if header.startswith("Basic "):
            try:
                given = base64.b64decode(header[6:], validate=True).decode("utf-8")
            except ValueError:
                given = ""
        # Every line is compared, in constant time, so timing tells nothing about users.
        found = None
        for line in users:
            login, _, grants = line.partition(" ")
            if bool(given) and hmac.compare_digest(login.encode(), given.encode()):
                found = grants.split()
        if found is not None:
            self.grants = found
            return given.split(":", 1)[0]
        self.refuse(401, "Unauthorized")
        return None

    def refuse(self, status, reason):
        self.send_response(status, reason)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="airlock-test-git"')
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def allowed_refs(self, path):
        """The refs the user may reach in the repository of `path`: [] for all of them,
        None for none (the repository is not granted)."""
        if not self.grants:
            return []
        repo = path.lstrip("/").split(".git/", 1)[0] + ".git"
        refs = None
        for grant in self.grants:
            name, _, ref = grant.partition("#")
            if name == repo:
                if not ref:
                    return []
                refs = (refs or []) + [ref]
        return refs

    def run_backend(self):
        user = self.authorized()
        if user is None:
            return
        url = urllib.parse.urlsplit(self.path)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.project_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_SOFTWARE": self.server_version,
            "SERVER_NAME": self.server.server_address[0],
            "SERVER_PORT": str(self.server.server_address[1]),
            "REQUEST_METHOD": self.command,
            "PATH_INFO": urllib.parse.unquote(url.path),
            "QUERY_STRING": url.query,
            "REMOTE_ADDR": self.client_address[0],
        }
        if user:
            env["REMOTE_USER"] = user
        refs = self.allowed_refs(env["PATH_INFO"]) if user else []
        if refs is None:
            self.refuse(403, "Forbidden")
            return
        if refs:
            # Later entries win; `!` exposes a ref an earlier entry hid. Objects go out by
            # advertised tips only, so a hidden branch's commits cannot be asked for by id.
            config = [("transfer.hideRefs", "refs/")] + [("transfer.hideRefs", "!" + r) for r in refs]
            config += [(f"uploadpack.allow{k}SHA1InWant", "false") for k in ("Tip", "Reachable", "Any")]
            env["GIT_CONFIG_COUNT"] = str(len(config))
            for i, (key, value) in enumerate(config):
                env[f"GIT_CONFIG_KEY_{i}"] = key
                env[f"GIT_CONFIG_VALUE_{i}"] = value
        for key in ("HOME", "GIT_TRACE", "GIT_TRACE_PACKET"):
            if key in os.environ:
                env[key] = os.environ[key]
        ctype = self.headers.get("Content-Type")
        if ctype:
            env["CONTENT_TYPE"] = ctype
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        length = self.headers.get("Content-Length")
        if length is not None and not chunked:
            env["CONTENT_LENGTH"] = length
        # Git-Protocol (protocol v2), Content-Encoding (gzip bodies), etc.
        for key, value in self.headers.items():
            name = "HTTP_" + key.upper().replace("-", "_")
            if name not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                env[name] = value
        if refs:
            # Protocol v2 hands out any object asked for by id, hidden or not: such a user
            # gets protocol v0, which checks every want against the advertised tips.
            env.pop("HTTP_GIT_PROTOCOL", None)

        proc = subprocess.Popen(
            [BACKEND],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
        )
        feeder = threading.Thread(target=self.feed_body, args=(proc.stdin, chunked, length))
        feeder.start()
        try:
            self.relay_response(proc.stdout)
        finally:
            feeder.join()
            proc.stdout.close()
            proc.wait()
            self.close_connection = True

    def feed_body(self, stdin, chunked, length):
        """Copy the request body (plain or chunked) to the backend's stdin."""
        try:
            if chunked:
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        # trailers, up to the empty line
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    if not self.copy_exactly(size, stdin):
                        return
                    self.rfile.readline()  # CRLF after each chunk
            elif length:
                self.copy_exactly(int(length), stdin)
        except BrokenPipeError:
            pass
        finally:
            try:
                stdin.close()
            except BrokenPipeError:
                pass

    def copy_exactly(self, size, out):
        """Copy `size` bytes of the request to `out`; False when the client hung up first."""
        remaining = size
        while remaining:
            data = self.rfile.read(min(remaining, 65536))
            if not data:
                return False
            out.write(data)
            remaining -= len(data)
        return True

    def relay_response(self, out):
        """Turn CGI output (headers, blank line, body) into an HTTP response."""
        status, reason, headers = 200, "OK", []
        while True:
            line = out.readline()
            if not line or line in (b"\r\n", b"\n"):
                break
            key, _, value = line.decode("latin-1").rstrip("\r\n").partition(":")
            value = value.strip()
            if key.lower() == "status":
                code, _, reason = value.partition(" ")
                status = int(code)
            else:
                headers.append((key, value))
        self.send_response(status, reason or None)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Connection", "close")
        # libgit2 reads a response with neither Content-Length nor chunked encoding as
        # having no body at all, so the body is streamed chunked.
        if self.command != "HEAD":
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.command != "HEAD":
            while chunk := out.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    parser = argparse.ArgumentParser(description="git smart HTTP for tests")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("root")
    parser.add_argument("--users", metavar="FILE", help="user:password [GRANT...] lines; basic auth required")
    args = parser.parse_args()
    host, port, root = args.host, args.port, os.path.abspath(args.root)
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.project_root = root
    server.users_file = args.users
    print(f"git smart HTTP on http://{host}:{port}/ serving {root}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
