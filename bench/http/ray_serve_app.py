"""Ray Serve's side of bench/http: the trivial function over HTTP.

    python ray_serve_app.py PORT

One replica of a deployment whose handler takes the JSON array of the request
body and answers its first element (`[1]` -> `1`, as wray's `microbench/noop`),
on http://127.0.0.1:PORT/noop. Everything else is Ray Serve 2.60's default
(max_ongoing_requests 5 unless MAX_ONGOING_REQUESTS says otherwise, request
logging). It starts a local Ray with
NUM_CPUS CPUs (default 2), prints `ready` once the route answers, and serves
until SIGTERM or SIGINT, when it shuts Serve and Ray down.
"""

import os
import signal
import sys
import threading
import urllib.request

import ray
from ray import serve
from starlette.requests import Request


class Noop:
    async def __call__(self, request: Request):
        args = await request.json()
        return args[0]


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    ray.init(num_cpus=int(os.environ.get("NUM_CPUS", "2")), include_dashboard=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    options = {"num_replicas": 1}
    if "MAX_ONGOING_REQUESTS" in os.environ:
        options["max_ongoing_requests"] = int(os.environ["MAX_ONGOING_REQUESTS"])
    app = serve.deployment(Noop, **options).bind()
    serve.run(app, name="noop", route_prefix="/noop")

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/noop",
        data=b"[1]",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = answer.read()
    if body.strip() != b"1":
        sys.exit(f"unexpected answer {body!r}")
    print("ready", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    serve.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
