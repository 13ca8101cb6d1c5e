"""A server whose capacity is known by construction, for the capacity experiment's tests.

One thread answers one request at a time (a connection per request, as the lab's default
runs), serving the files under ROOT. Each request costs COST_MS before its answer, either
asleep (`sleep`: the server holds a slot, not a CPU: capacity 1/COST, far below what its
CPU could carry) or spinning on the thread's own CPU clock (`spin`: a service demand of
COST of CPU per request, so that D = U/X measures it and 1/D is the capacity's bound).

usage: fixed_cost.py sleep|spin COST_MS ROOT   (prints its port, then serves until killed)
"""

import os
import socket
import sys
import time


def costly(mode, cost_s):
    if mode == "sleep":
        time.sleep(cost_s)
        return
    start = time.thread_time()
    while time.thread_time() - start < cost_s:
        pass


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


def answer(conn, root, head):
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    path = line[1].split("?", 1)[0] if len(line) == 3 else "/"
    full = os.path.realpath(os.path.join(root, path.lstrip("/")))
    if full.startswith(root + os.sep) and os.path.isfile(full):
        with open(full, "rb") as f:
            body = f.read()
        status = b"200 OK"
    else:
        body, status = b"not found\n", b"404 Not Found"
    conn.sendall(
        b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n" + body
    )


def main():
    mode, cost_s, root = sys.argv[1], float(sys.argv[2]) / 1000.0, os.path.realpath(sys.argv[3])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            head = read_head(conn)
            if head is not None:
                costly(mode, cost_s)
                answer(conn, root, head)
        except OSError:
            pass
        finally:
            conn.close()


main()
