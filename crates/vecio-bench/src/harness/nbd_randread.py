# Random reads over NBD with libnbd's Python binding: DEPTH reads of BS bytes kept in flight on
# one connection for SECONDS, at block-aligned offsets drawn uniformly over the export (seeded,
# so every server gets the same offsets). Run by vecio-bench as
#   python3 -c SCRIPT SOCKET TLS_DIR BS DEPTH SECONDS
# (TLS_DIR empty: plain NBD; else TLS required, the CA's certificate in TLS_DIR). Prints one
# JSON line: requests completed, bytes, seconds from the first read to the last completion,
# and the CPU time (user + system) this process spent over those seconds.
import json
import random
import resource
import sys
import time

import nbd


def connect(socket, tls_dir):
    h = nbd.NBD()
    if tls_dir:
        h.set_tls(nbd.TLS_REQUIRE)
        h.set_tls_certificates(tls_dir)
    h.connect_unix(socket)
    return h


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(h, bs, depth, seconds):
    blocks = h.get_size() // bs
    bufs = [nbd.Buffer(bs) for _ in range(depth)]
    free = list(range(depth))
    errors = []

    def completion(slot):
        def done(err):
            if err.value:
                errors.append(err.value)
            free.append(slot)
            return 1  # retire the command
        return done

    callbacks = [completion(i) for i in range(depth)]
    offset = random.Random(1).randrange
    pread = h.aio_pread
    n = 0
    cpu0 = cpu_s()
    start = time.monotonic()
    end = start + seconds
    while True:
        while free:
            i = free.pop()
            pread(bufs[i], offset(blocks) * bs, completion=callbacks[i])
            n += 1
        h.poll(-1)
        if time.monotonic() >= end:
            break
    while h.aio_in_flight() > 0:
        h.poll(-1)
    elapsed = time.monotonic() - start
    return n, elapsed, cpu_s() - cpu0, errors


def main():
    socket, tls_dir = sys.argv[1], sys.argv[2]
    bs, depth, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    h = connect(socket, tls_dir)
    n, elapsed, cpu, errors = measure(h, bs, depth, seconds)
    h.shutdown()
    if errors:
        sys.exit("%d of %d reads failed, first errno %d" % (len(errors), n, errors[0]))
    print(json.dumps({"requests": n, "bytes": n * bs, "seconds": elapsed, "cpu_s": cpu}))


main()
