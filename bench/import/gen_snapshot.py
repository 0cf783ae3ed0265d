#!/usr/bin/env python3
"""gen_snapshot.py — writes a large PyTorch-shaped memory snapshot for the
import benchmark (bench/import/import_mem.sh), streaming, in flat memory.

  python3 bench/import/gen_snapshot.py MEGABYTES OUT.pickle [SEED]

The pickle is written opcode by opcode the way CPython's pickler (protocol
4, FRAMEs of 64 KiB) writes what torch.cuda.memory._snapshot() returns with
_record_memory_history() at its defaults (context="all", stacks="python"):
every entry (alloc, free_requested, free_completed) carries its stack;
the frame dicts are shared objects (the pickle fetches them again through the
memo), each entry's dict, frames list and action string are new objects, the
keys are shared.  400 distinct frames make 300 distinct stacks, 15-45 deep.
Sizes and lifetimes are drawn from a seeded generator; addresses never repeat
while live.  Nothing here is a real capture: it is the shape, at any size.
"""
import random
import struct
import sys


class Writer:
    def __init__(self, f):
        self.f, self.buf, self.memo, self.shared = f, bytearray(), 0, {}

    def op(self, b):
        self.buf += b
        if len(self.buf) >= 65536:
            self.flush()

    def flush(self):
        if self.buf:
            self.f.write(b"\x95" + struct.pack("<Q", len(self.buf)) + self.buf)
            self.buf = bytearray()

    def memoize(self):
        self.op(b"\x94")
        self.memo += 1
        return self.memo - 1

    def get(self, i):
        self.op(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))

    def str_new(self, s):
        b = s.encode()
        self.op((b"\x8c" + bytes([len(b)]) if len(b) < 256 else b"X" + struct.pack("<I", len(b))) + b)
        self.memoize()

    def str_shared(self, s):
        if s in self.shared:
            self.get(self.shared[s])
        else:
            self.str_new(s)
            self.shared[s] = self.memo - 1

    def int(self, v):
        if 0 <= v < 256:
            self.op(b"K" + bytes([v]))
        elif 0 <= v < 65536:
            self.op(b"M" + struct.pack("<H", v))
        elif -2**31 <= v < 2**31:
            self.op(b"J" + struct.pack("<i", v))
        else:
            n = (v.bit_length() + 8) // 8
            self.op(b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True))


def main():
    target = int(float(sys.argv[1]) * 1e6)
    out = sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    files = [f"/opt/venv/lib/python3.11/site-packages/pkg{i}/module{j}.py" for i in range(12) for j in range(6)]
    frames = [(rng.choice(files), rng.randrange(1, 3000), f"fn_{k}") for k in range(400)]
    stacks = [[rng.randrange(400) for _ in range(rng.randrange(15, 46))] for _ in range(300)]
    sizes = [512 * rng.randrange(1, 64) for _ in range(40)] + [(1 << 20) * rng.randrange(1, 200) for _ in range(20)]
    with open(out, "wb") as f:
        w = Writer(f)
        f.write(b"\x80\x04")
        frame_memo = {}
        w.op(b"}")
        w.memoize()
        w.op(b"(")
        w.str_shared("segments")
        w.op(b"]")
        w.memoize()  # the end state: kept empty, what the importer needs is in the trace
        w.str_shared("device_traces")
        w.op(b"]")
        w.memoize()
        w.op(b"]")
        w.memoize()
        live, addr, t, n = [], 0x7f0000000000, 1_000_000, 0

        def entry(action, a, size, stack):
            w.op(b"}")
            w.memoize()
            w.op(b"(")
            for k, v in (("action", action), ("addr", a), ("size", size), ("stream", 0), ("time_us", t)):
                w.str_shared(k)
                if isinstance(v, str):
                    w.str_new(v)
                else:
                    w.int(v)
            w.str_shared("frames")
            w.op(b"]")
            w.memoize()
            w.op(b"(")
            for fi in stacks[stack]:
                if fi in frame_memo:
                    w.get(frame_memo[fi])
                    continue
                fn, line, name = frames[fi]
                w.op(b"}")
                frame_memo[fi] = w.memoize()
                w.op(b"(")
                w.str_shared("filename")
                w.str_shared(fn)
                w.str_shared("line")
                w.int(line)
                w.str_shared("name")
                w.str_shared(name)
                w.op(b"u")
            w.op(b"e")
            w.str_shared("compile_context")
            w.str_new("N/A")
            w.str_shared("user_metadata")
            w.str_new("")
            w.op(b"u")

        w.op(b"(")
        batch = 0
        while f.tell() + len(w.buf) < target:
            if live and (len(live) > 4000 or rng.random() < 0.5):
                a, size, stack = live.pop(rng.randrange(len(live)))
                entry("free_requested", a, size, stack)
                entry("free_completed", a, size, stack)
                batch += 2
            else:
                size, stack = rng.choice(sizes), rng.randrange(300)
                entry("alloc", addr, size, stack)
                live.append((addr, size, stack))
                addr += (size + 511) // 512 * 512
                batch += 1
            t += rng.randrange(1, 50)
            n += 1
            if batch >= 1000:
                w.op(b"e(")
                batch = 0
        w.op(b"e")  # the last batch
        w.op(b"a")  # the device's list into device_traces
        w.str_shared("allocator_settings")
        w.op(b"}")
        w.memoize()
        w.op(b"(")
        w.str_shared("expandable_segments")
        w.op(b"\x89")
        w.op(b"u")
        w.op(b"u.")  # the top-level dict's items; STOP
        w.flush()
    print(f"{out}: {n} entries' worth of events, {target / 1e6:.0f} MB asked", file=sys.stderr)


if __name__ == "__main__":
    main()
