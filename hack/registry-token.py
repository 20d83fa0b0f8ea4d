#!/usr/bin/python3
"""A token service for a test registry (Distribution's `auth: token`), for tests only.

It answers the distribution spec's token exchange: GET /token?service=S&scope=... with
HTTP basic auth, and grants each user the actions its rights allow on each repository
asked for, in a JWT signed RS256 with KEY and carrying CERT in its `x5c` header, which the
registry checks against the same certificate (`rootcertbundle`). This is how a real
registry scopes credentials per repository, which htpasswd auth cannot: the tests give a
cluster `pull` on its bundles and `pull,push` on its reports (bundles-format.md 14.7.1).

Usage: registry-token.py HOST PORT --key KEY.pem --cert CERT.pem --users FILE
                         [--service NAME] [--issuer NAME]

FILE is JSON, read again on each request (a test changes rights by rewriting it):
  {"USER": {"password": "PW", "pull": ["PATTERN", ...], "push": ["PATTERN", ...]}, ...}
where a PATTERN is a repository name, or a prefix ending in `*`. An unknown user or a
wrong password gets 401; a scope the user has no right to is left out of the token, and
the registry then refuses the request. Signing runs `openssl dgst -sha256 -sign`.
"""

import argparse
import base64
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_SECONDS = 300


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def allowed(patterns, repository):
    return any(repository.startswith(p[:-1]) if p.endswith("*") else repository == p for p in patterns)


class Handler(BaseHTTPRequestHandler):
    server_version = "airlock-test-token/1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def refuse(self):
        self.send_response(401, "Unauthorized")
        self.send_header("WWW-Authenticate", 'Basic realm="airlock-test-token"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def user(self):
        """The user the request authenticates as; None when it does not."""
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return None
        try:
            name, _, password = base64.b64decode(header[6:], validate=True).decode("utf-8").partition(":")
        except ValueError:
            return None
        try:
            with open(self.server.users_file, encoding="utf-8") as f:
                users = json.load(f)
        except FileNotFoundError:
            users = {}
        rights = users.get(name)
        if rights is None or not hmac.compare_digest(rights.get("password", "").encode(), password.encode()):
            return None
        return name, rights

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            self.send_error(404)
            return
        found = self.user()
        if found is None:
            self.refuse()
            return
        name, rights = found
        query = urllib.parse.parse_qs(url.query)
        access = []
        for scope in query.get("scope", []):
            kind, _, rest = scope.partition(":")
            repository, _, actions = rest.rpartition(":")
            if kind != "repository":
                continue
            granted = [a for a in actions.split(",") if a in ("pull", "push") and allowed(rights.get(a, []), repository)]
            if granted:
                access.append({"type": "repository", "name": repository, "actions": granted})
        token = self.server.sign(name, query.get("service", [self.server.service])[0], access)
        body = json.dumps({"token": token, "access_token": token, "expires_in": TOKEN_SECONDS}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TokenServer(ThreadingHTTPServer):
    daemon_threads = True

    def sign(self, subject, audience, access):
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.cert_der]}
        claims = {"iss": self.issuer, "sub": subject, "aud": audience, "exp": now + TOKEN_SECONDS,
                  "nbf": now - 10, "iat": now, "jti": b64url(os.urandom(12)), "access": access}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key_file],
                                   input=signing_input.encode(), capture_output=True, check=True).stdout
        return signing_input + "." + b64url(signature)


def main():
    parser = argparse.ArgumentParser(description="token service for a test registry")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--key", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--users", required=True)
    parser.add_argument("--service", default="airlock-test")
    parser.add_argument("--issuer", default="airlock-test-token")
    args = parser.parse_args()
    der = subprocess.run(["openssl", "x509", "-in", args.cert, "-outform", "DER"], capture_output=True, check=True).stdout
    server = TokenServer((args.host, args.port), Handler)
    server.key_file, server.cert_der = args.key, base64.b64encode(der).decode()
    server.users_file, server.service, server.issuer = args.users, args.service, args.issuer
    print(f"token service on http://{args.host}:{args.port}/token", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
