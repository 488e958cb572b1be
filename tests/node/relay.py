"""qemu's guestfwd program: one guest connection on stdin/stdout, relayed to a TCP address on the
host (the API server on 127.0.0.1). qemu starts one per connection.

    python3 relay.py 127.0.0.1 PORT
"""

import os
import socket
import sys
import threading


def main() -> None:
    upstream = socket.create_connection((sys.argv[1], int(sys.argv[2])))

    def to_upstream() -> None:
        while data := os.read(0, 1 << 16):
            upstream.sendall(data)
        upstream.shutdown(socket.SHUT_WR)

    threading.Thread(target=to_upstream, daemon=True).start()
    while data := upstream.recv(1 << 16):
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]


if __name__ == "__main__":
    try:
        main()
    except OSError:
        pass
