"""A plain HTTP server for benches: serves a folder's files on several loopback ports (standing
for as many web sites), each reply after a fixed delay (standing for the network's latency).

Run: python bench/support/image_server.py FOLDER --sites 8 --delay 0.1
It prints one line, the ports it listens on (comma-separated), then serves until killed.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
import time


class DelayedHandler(http.server.SimpleHTTPRequestHandler):
    delay = 0.0

    def do_GET(self):
        time.sleep(self.delay)
        super().do_GET()

    def log_message(self, *args):  # a bench prints its own lines only
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder")
    parser.add_argument("--sites", type=int, default=1)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    args = parser.parse_args()
    DelayedHandler.delay = args.delay
    handler = functools.partial(DelayedHandler, directory=args.folder)
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) for _ in range(args.sites)]
    print(",".join(str(server.server_address[1]) for server in servers), flush=True)
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    servers[0].serve_forever()


if __name__ == "__main__":
    sys.exit(main())
