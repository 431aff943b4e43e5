"""The physical yardstick of the cluster transfer case: copy N bytes from one
process to another over a loopback TCP connection, as fast as plain sockets go.

    python3 tcp_copy.py [--sizes 1MiB,64MiB,1GiB] [--runs 5]

Two processes (this one sends, a forked child receives). Per size the sender
holds the bytes already made (a preallocated buffer) and the receiver a
preallocated buffer of the same size; one timed run is: the sender writes a
small header (the size), `sendall`s the whole buffer, and waits for the
receiver's one-byte acknowledgement, sent once `recv_into` has filled its
buffer. So the time covers every byte landing in the other process's memory,
plus one loopback round trip. The connection is made once, before the timed
runs (a wray or Ray transfer also reuses its connections). Socket buffers are
set to 4 MiB and the copy goes in 4 MiB chunks.

Output: one JSON line per size, best of --runs (and the median):
    {"bench": "tcp_copy", "system": "tcp", "size": 1048576, "runs": 5,
     "best_s": ..., "median_s": ..., "gbps": ..., "gbps_median": ...}
GB/s is 10^9 bytes per second (as in Ray's own microbenchmark).
"""

import argparse
import json
import os
import socket
import statistics
import struct
import sys
import time

CHUNK = 4 << 20
SOCKBUF = 4 << 20


def parse_size(text):
    text = text.strip()
    for suffix, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * mult)
    return int(text)


def tune(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKBUF)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKBUF)


def recv_exact(sock, view):
    got = 0
    n = len(view)
    while got < n:
        r = sock.recv_into(view[got:], min(CHUNK, n - got))
        if r == 0:
            raise EOFError("peer closed")
        got += r


def receiver(listener, max_size):
    conn, _ = listener.accept()
    tune(conn)
    buf = bytearray(max_size)
    # Touch every page once so the first timed run does not pay page faults
    # the later ones do not.
    buf[::4096] = b"\1" * len(range(0, max_size, 4096))
    view = memoryview(buf)
    head = bytearray(8)
    while True:
        try:
            recv_exact(conn, memoryview(head))
        except EOFError:
            break
        (size,) = struct.unpack("<Q", head)
        if size == 0:
            break
        recv_exact(conn, view[:size])
        conn.sendall(b"k")
    conn.close()


def send_once(sock, view):
    sock.sendall(struct.pack("<Q", len(view)))
    for off in range(0, len(view), CHUNK):
        sock.sendall(view[off : off + CHUNK])
    ack = sock.recv(1)
    if ack != b"k":
        raise RuntimeError("no acknowledgement from the receiver")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1MiB,64MiB,1GiB")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    max_size = max(sizes)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKBUF)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:
        try:
            receiver(listener, max_size)
        finally:
            os._exit(0)
    listener.close()

    sock = socket.create_connection(("127.0.0.1", port))
    tune(sock)
    # The bytes to send: random, made before any timing (1 MiB repeated).
    src = bytearray(os.urandom(1 << 20)) * (max_size // (1 << 20) + 1)
    del src[max_size:]
    view = memoryview(src)
    for size in sizes:
        # Warm-up: one untimed copy of this size.
        send_once(sock, view[:size])
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            send_once(sock, view[:size])
            times.append(time.perf_counter() - t)
        best = min(times)
        med = statistics.median(times)
        print(json.dumps({
            "bench": "tcp_copy", "system": "tcp", "size": size, "runs": args.runs,
            "best_s": round(best, 6), "median_s": round(med, 6),
            "gbps": round(size / best / 1e9, 3), "gbps_median": round(size / med / 1e9, 3),
        }), flush=True)
    sock.sendall(struct.pack("<Q", 0))
    sock.close()
    os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
