#!/usr/bin/python3
# Hostile HTTP clients against an hb-env ORS listener on 127.0.0.1 (issue 22): 200 sockets each
# sending a 1 MB header line that never ends, then RSS/CPU of the server, another client's
# latency, and a client trickling one byte a second. Usage: hostile_http.py PORT SERVER_PID [skip]
# ("skip" leaves out the trickler, which never ends against a server without a request deadline).
import socket, sys, time, os
port, pid = int(sys.argv[1]), int(sys.argv[2])
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) // 1024
def cpu():
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
print("idle rss MB", rss(), "cpu s", cpu())
socks = []
t0 = time.time()
peak = 0
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
    s.sendall(b"GET /health HTTP/1.1\r\nX-Bomb: ")
    try:
        for _ in range(16): s.sendall(b"a" * 65536)
    except OSError: pass
    socks.append(s)
    peak = max(peak, rss())
codes = {}
for s in socks:
    try: d = s.recv(200); codes[d[:12]] = codes.get(d[:12], 0) + 1
    except OSError as e: codes[str(e)] = codes.get(str(e), 0) + 1
    s.close()
print("200 x 1 MB header lines: answers", codes, "peak rss MB", peak, "secs", round(time.time()-t0, 2))
time.sleep(3)
print("after close rss MB", rss(), "cpu s", cpu())
s = socket.create_connection(("127.0.0.1", port)); t = time.time()
s.sendall(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"); s.recv(100)
print("other client /health ms", round((time.time()-t)*1000, 2))
if len(sys.argv) > 3: sys.exit(0)
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(60); t = time.time()
s.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
try:
    while True:
        s.sendall(b"a"); time.sleep(1)
except OSError: pass
try: print("trickler answered", s.recv(100)[:30], "after s", round(time.time()-t, 1))
except OSError as e: print("trickler", e, round(time.time()-t, 1))
