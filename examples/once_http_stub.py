#!/usr/bin/env python3
"""once_http_stub.py - a stand-in for an external HTTP API that is not
idempotent (an e-mail service), for examples/once_http.cpp and its test.

    once_http_stub.py LOG PORTFILE [DELAY]

Listens on 127.0.0.1 (a free port, written to PORTFILE once listening),
appends one line per request to LOG ("<n> <Idempotency-Key> <body>"), waits
DELAY seconds (default 0.5: long enough for concurrent callers to overlap),
and answers 200 with {"id": <n>, "status": "sent"}, n counting the requests
it got.  Every request is a new "e-mail": the stub itself deduplicates
nothing.
"""
import http.server
import json
import os
import sys
import threading
import time

LOG, PORTFILE = sys.argv[1], sys.argv[2]
DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
lock = threading.Lock()
count = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        with lock:
            count += 1
            n = count
            with open(LOG, "a") as f:
                f.write("%d %s %s\n" % (n, self.headers.get("Idempotency-Key", "-"), body))
        time.sleep(DELAY)
        reply = json.dumps({"id": n, "status": "sent"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
