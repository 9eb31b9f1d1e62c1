#!/usr/bin/env python3
"""pantry: the sample app `gauntlet init` writes, a small stock API in Python 3
(standard library only), for gauntlet's qa suite (modality `http-api`).

It serves JSON over HTTP on 127.0.0.1 and prints one line,
`listening on http://127.0.0.1:<port>`, on stdout once it accepts connections; the
harness starts it without `--port` (so on port 0: the OS chooses) and reads that line
to learn the URL. With `--mutant <capability>` the same program breaks exactly that
capability, so that a claimed test can be shown to fail when the capability does not
hold. Everything else a mutant does is what the app does, byte for byte: the same
headers, the same errors, the same start-up, so that a test can only tell a mutant by
the behaviour it breaks (`gauntlet tells pantry` checks).

    GET  /health        -> 200 {"status": "ok"}
    POST /items         -> 201 {"id": n, "name": ..., "quantity": ...}  (ids 1, 2, ...)
                           400 {"error": ...} for a body that is not a valid item
    GET  /items/<id>    -> 200 the item, 404 {"error": "not found"}
    GET  /items         -> 200 {"items": [every item, by id]}
    anything else       -> 404 {"error": "not found"}

Mutants:
    health          GET /health answers 503 {"status": "degraded"}.
    add-item        an item is stored with quantity 0, whatever was asked (the
                    answer to the POST still echoes what was asked).
    reject-invalid  a negative quantity is accepted and stored.

`fast-under-load` is ambiguous: no test can decide it, so it has no mutant.

Exit codes: 0 on SIGTERM/SIGINT, 1 when it cannot bind or announce, 2 on a bad
argument (an unknown `--mutant` among them).
"""

import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = "pantry"

# Every capability with a mutant.
MUTANTS = ("health", "add-item", "reject-invalid")

# The largest request body read; anything announced bigger is refused.
MAX_BODY_BYTES = 64 * 1024
# The longest item name kept.
MAX_NAME_CHARS = 200


def mutant_arg(value: str) -> str:
    if value not in MUTANTS:
        raise argparse.ArgumentTypeError(
            f"`{value}` is not a capability with a mutant (expected one of: {', '.join(MUTANTS)})"
        )
    return value


class Store:
    """The items, in memory, behind one lock: ids are 1, 2, ... in the order stored."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def add(self, name: str, quantity: int) -> dict:
        with self.lock:
            item = {"id": len(self.items) + 1, "name": name, "quantity": quantity}
            self.items.append(item)
            return dict(item)

    def get(self, item_id: int):
        with self.lock:
            if 1 <= item_id <= len(self.items):
                return dict(self.items[item_id - 1])
            return None

    def all(self) -> list:
        with self.lock:
            return [dict(i) for i in self.items]


def invalid(body):
    """Why `body` is not an item, or None when it is one."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        return "name must be a non-empty string"
    if len(name) > MAX_NAME_CHARS:
        return f"name is longer than {MAX_NAME_CHARS} characters"
    quantity = body.get("quantity")
    # bool is an int in Python; true is not a quantity.
    if not isinstance(quantity, int) or isinstance(quantity, bool):
        return "quantity must be an integer"
    return None


def handle(mutant, store: Store, method: str, path: str, raw: bytes):
    """The API: (mutant, store, method, path, body) -> (status, JSON)."""
    if method == "GET" and path == "/health":
        if mutant == "health":
            return 503, {"status": "degraded"}
        return 200, {"status": "ok"}
    if path == "/items" and method == "POST":
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            body = None
        why = invalid(body)
        if why is None and body["quantity"] < 0 and mutant != "reject-invalid":
            why = "quantity must not be negative"
        if why is not None:
            return 400, {"error": why}
        name, quantity = body["name"], body["quantity"]
        stored = store.add(name, 0 if mutant == "add-item" else quantity)
        return 201, {"id": stored["id"], "name": name, "quantity": quantity}
    if path == "/items" and method == "GET":
        return 200, {"items": store.all()}
    if method == "GET" and path.startswith("/items/"):
        rest = path[len("/items/"):]
        item = store.get(int(rest)) if rest.isascii() and rest.isdigit() and len(rest) < 10 else None
        if item is None:
            return 404, {"error": "not found"}
        return 200, item
    return 404, {"error": "not found"}


def serve(mutant, port: int) -> int:
    """Bind 127.0.0.1:`port`, say where, and answer until SIGTERM or SIGINT."""
    store = Store()

    class Api(BaseHTTPRequestHandler):
        server_version = NAME
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def answer(self) -> None:
            declared = self.headers.get("Content-Length") or "0"
            size = int(declared) if declared.isascii() and declared.isdigit() else None
            unread = size is None or size > MAX_BODY_BYTES
            if size is None:
                status, payload = 400, {"error": "bad content-length"}
            elif unread:
                status, payload = 413, {"error": "body too large"}
            else:
                target = self.path.split("?", 1)[0]
                status, payload = handle(mutant, store, self.command, target, self.rfile.read(size))
            body = json.dumps(payload).encode("utf-8")
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            if unread:
                # What the client sent after the head is still in the socket: this
                # connection cannot carry another request.
                headers.append(("Connection", "close"))
                self.close_connection = True
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            print(f"{NAME}: {self.address_string()} {format % args}", file=sys.stderr)

    # Every method gets the same answer: the API decides by method and path.
    for verb in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        setattr(Api, f"do_{verb}", Api.answer)

    # A thread per connection (daemon threads), so that one slow client holds up no
    # other and an idle keep-alive connection never delays the exit.
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), Api)
    except OSError as e:
        print(f"{NAME}: cannot bind 127.0.0.1:{port}: {e}", file=sys.stderr)
        return 1
    with server:
        address, bound = server.server_address[:2]
        try:
            # The harness reads exactly this line from a pipe: flushed, or it waits.
            print(f"listening on http://{address}:{bound}", flush=True)
        except OSError as e:
            print(f"{NAME}: cannot announce the address on stdout: {e}", file=sys.stderr)
            return 1
        try:
            server.serve_forever()
        except SystemExit:
            pass
    return 0


def main(argv) -> int:
    cli = argparse.ArgumentParser(prog=NAME, description="A small stock API")
    cli.add_argument("--port", type=int, default=0,
                     help="port on 127.0.0.1 (default 0: the OS chooses, and it is printed)")
    cli.add_argument("--mutant", metavar="CAPABILITY", type=mutant_arg, default=None,
                     help="break exactly this capability (the harness tests tests with it)")
    options = cli.parse_args(argv)  # exits 2 on a bad argument
    if not 0 <= options.port <= 65535:
        cli.error(f"--port {options.port} is not a port")
    # SIGTERM and SIGINT end the process cleanly, at any point.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))
    return serve(options.mutant, options.port)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
