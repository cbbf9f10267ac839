#!/usr/bin/env python3
"""A tiny HTTP(S) server for the leader::http tests (Python standard library only).

Usage: http_double.py [--cert F --key F [--client-ca F]]
Listens on 127.0.0.1 on a free port and prints "PORT <n>" on stdout once it accepts connections.
Paths:
  /echo...        200, a JSON object: method, target, headers (lower-case names), body, peer_port
  /status/<n>     status n, body "status <n>"
  /slow/<ms>      200 after <ms> milliseconds
  /big/<n>        200 with a body of n bytes
  /close          reads the request, then closes the connection without a reply
"""
import argparse
import http.server
import json
import ssl
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so the client's pool can reuse connections
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="text/plain"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Double", "http_double")
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        path = self.path.split("?")[0]
        if path.startswith("/echo"):
            out = {"method": self.command, "target": self.path, "body": body,
                   "headers": {k.lower(): v for k, v in self.headers.items()},
                   "peer_port": self.client_address[1]}
            self.reply(200, json.dumps(out), "application/json")
        elif path.startswith("/status/"):
            code = int(path.split("/")[2])
            self.reply(code, "status %d" % code)
        elif path.startswith("/slow/"):
            time.sleep(int(path.split("/")[2]) / 1000.0)
            self.reply(200, "slow")
        elif path.startswith("/big/"):
            self.reply(200, b"x" * int(path.split("/")[2]))
        elif path == "/close":
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            self.reply(404, "no such path")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--client-ca")
    args = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        if args.client_ca:
            ctx.load_verify_locations(args.client_ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
