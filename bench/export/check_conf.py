#!/usr/bin/env python3
"""Check on a GPU that PyTorch accepts pagetune's exported allocator confs and
behaves as each one says.

For every conf string on the command line, a fresh Python process is started
with PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF both set to it (as the
export writes them).  It allocates (PyTorch parses the conf lazily and throws
at the first allocation on an unknown key), reports success or the exact
exception, reads back torch.cuda.memory._snapshot()['allocator_settings'] and
checks each key took effect, then runs a small experiment per key:

  max_split_size_mb M     a freed block >= M MiB is not split for a smaller
                          request: a new segment is reserved instead
  roundup_power2_divisions D   memory_allocated() grows by the rounded size
  garbage_collection_threshold T  (with --fraction/--cap) without a cap the
                          cached block stays; under the cap
                          set_per_process_memory_fraction(F) the GC frees it;
                          and the cap admits exactly --cap bytes, not 2 MiB more
  expandable_segments:True  the snapshot's segments are expandable
  backend:cudaMallocAsync   get_allocator_backend(); the pool keeps freed memory
                          (release threshold UINT64_MAX) until empty_cache();
                          the fraction cap holds
  pinned_use_cuda_host_register:True  a pinned host tensor can be made

--bad CONF must be rejected (the deliberate unknown key); --probe CONF is only
reported (accepted or not); --direct runs PYTORCH_NO_CUDA_MEMORY_CACHING=1
(the export's nearest to the direct mechanism); --precedence sets the two
variables to different values to see which one PyTorch reads.

Usage: check_conf.py [--fraction F --cap BYTES] [--bad CONF]... [--probe CONF]...
                     [--direct] [--precedence] [--log FILE] [--json FILE] CONF...
Exit status: 0 when every CONF passed and every --bad was rejected.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

MiB = 1 << 20
CONF_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
             "PYTORCH_NO_CUDA_MEMORY_CACHING")


def parse_conf(conf):
    """key -> value text, brackets kept (a loose reading: PyTorch is the judge)."""
    out, depth, cur = {}, 0, ""
    for c in conf.replace(" ", "") + ",":
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        if c == "," and depth == 0:
            if cur:
                k, _, v = cur.partition(":")
                out[k] = v
            cur = ""
        else:
            cur += c
    return out


def rp2_table(v):
    """roundup_power2_divisions as PyTorch 2.11 reads it: 16 intervals."""
    tab = [0] * 16
    if not v.startswith("["):
        return [int(v)] * 16
    first, last = True, 0
    for pair in v[1:-1].split(","):
        if not pair:
            continue
        b, _, d = pair.partition(":")
        d = int(d)
        if b == ">":
            for i in range(last + 1, 16):
                tab[i] = d
        else:
            idx = min(max(int(b).bit_length() - 1, 0), 15)
            if first:
                for i in range(idx):
                    tab[i] = d
                first = False
            tab[idx] = d
            last = idx
    return tab


def rp2_round(size, tab):
    """PyTorch's round_size with a division table (docs/pytorch-caching-allocator.md §2)."""
    if size < 512:
        return 512
    idx = min(max(size.bit_length() - 1 - 20, 0), 15)
    d = tab[idx]
    if d > 1 and size > 512 * d:
        if size & (size - 1) == 0:
            return size
        f = 1 << (size.bit_length() - 1)
        div = f >> (d.bit_length() - 1)
        lo = size & ~(div - 1)
        return size if lo == size else lo + div
    return (size + 511) // 512 * 512


# ---------------------------------------------------------------- child side

def child(spec):
    res = {"name": spec["name"], "conf": spec["conf"], "env": {k: os.environ.get(k) for k in CONF_VARS if k in os.environ},
           "checks": []}

    def check(name, ok, detail):
        res["checks"].append({"check": name, "ok": bool(ok), "detail": detail})

    stage = "import torch"
    import warnings
    warnings.simplefilter("always")
    try:
        with warnings.catch_warnings(record=True) as wl:
            import torch
            res["torch"] = torch.__version__
            stage = "torch.cuda.init"
            torch.cuda.init()
            stage = "first allocation"
            x = torch.empty(MiB, dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
        res["warnings"] = [str(w.message) for w in wl]
        res["accepted"] = True
    except Exception as e:  # the exact exception is the point
        res["accepted"] = False
        res["stage"] = stage
        res["error"] = f"{type(e).__name__}: {e}"
        return res
    props = torch.cuda.get_device_properties(0)
    res["device"] = props.name
    res["total_memory"] = props.total_memory
    res["backend"] = torch.cuda.memory.get_allocator_backend()
    try:
        settings = torch.cuda.memory._snapshot()["allocator_settings"]
        res["allocator_settings"] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in settings.items()}
    except Exception as e:
        settings = None
        res["snapshot_error"] = f"{type(e).__name__}: {e}"
    del x
    torch.cuda.empty_cache()
    keys = parse_conf(spec["conf"])
    if spec.get("mode") == "probe":
        return res

    def s(key):
        return None if settings is None else settings.get(key)

    # backend
    want_backend = keys.get("backend", "native")
    check("backend", res["backend"] == want_backend, f"get_allocator_backend()={res['backend']!r}, want {want_backend!r}")
    if settings is not None and spec["conf"]:
        last = next((v for k, v in settings.items() if k.endswith("ALLOC_CONF")), None)
        check("settings string", last == spec["conf"], f"allocator_settings holds {last!r}")

    expandable = keys.get("expandable_segments") == "True"
    native = want_backend == "native"

    if "max_split_size_mb" in keys:
        m = int(keys["max_split_size_mb"])
        v = s("max_split_size")
        if settings is not None:
            check("max_split_size read back", v == m * MiB, f"allocator_settings max_split_size={v}, want {m * MiB}")
        if native and not expandable:
            big = max(2 * m, m + 64) * MiB
            small = max(12, (m // 2) // 2 * 2) * MiB
            r0 = torch.cuda.memory_reserved()
            a = torch.empty(big, dtype=torch.uint8, device="cuda")
            del a
            b = torch.empty(small, dtype=torch.uint8, device="cuda")
            r1 = torch.cuda.memory_reserved() - r0
            del b
            torch.cuda.empty_cache()
            check("max_split_size behaves", r1 == big + small,
                  f"freed {big // MiB} MiB block, then {small // MiB} MiB: reserved {r1 // MiB} MiB "
                  f"(not split: {(big + small) // MiB}; split as without the knob: {big // MiB})")

    if "garbage_collection_threshold" in keys:
        t = float(keys["garbage_collection_threshold"])
        v = s("garbage_collection_threshold")
        if settings is not None:
            check("garbage_collection_threshold read back", v == t, f"allocator_settings garbage_collection_threshold={v}, want {t}")
        f, cap = spec.get("fraction"), spec.get("cap")
        if native and not expandable and f and cap and "max_split_size_mb" in keys:
            m = int(keys["max_split_size_mb"])
            blk = -(-int(t * cap + 64 * MiB) // (2 * MiB)) * 2 * MiB  # above the GC threshold
            req = 100 * MiB
            if blk >= m * MiB and blk + req < cap:
                def sequence():
                    torch.cuda.empty_cache()
                    r0 = torch.cuda.memory_reserved()
                    a = torch.empty(blk, dtype=torch.uint8, device="cuda")
                    del a
                    b = torch.empty(req, dtype=torch.uint8, device="cuda")
                    r = torch.cuda.memory_reserved() - r0
                    del b
                    torch.cuda.empty_cache()
                    return r
                r_nocap = sequence()
                check("GC idle without a cap", r_nocap == blk + req,
                      f"no fraction set: freed {blk // MiB} MiB stays cached, reserved {r_nocap // MiB} MiB after a {req // MiB} MiB request")
                torch.cuda.set_per_process_memory_fraction(float(f))
                r_cap = sequence()
                check("GC acts under the cap", r_cap == req,
                      f"set_per_process_memory_fraction({f}) (cap {cap} B): reserved {r_cap // MiB} MiB after the same "
                      f"sequence (GC freed the cached {blk // MiB} MiB: {r_cap == req})")
                torch.cuda.empty_cache()
                ok_cap = True
                try:
                    z = torch.empty(cap, dtype=torch.uint8, device="cuda")
                    del z
                except torch.OutOfMemoryError as e:
                    ok_cap = False
                    cap_err = str(e).splitlines()[0]
                torch.cuda.empty_cache()
                over_refused = False
                try:
                    z = torch.empty(cap + 2 * MiB, dtype=torch.uint8, device="cuda")
                    del z
                except torch.OutOfMemoryError:
                    over_refused = True
                torch.cuda.empty_cache()
                check("cap admits the tuned capacity", ok_cap,
                      f"torch.empty({cap} B) under fraction {f}: " + ("ok" if ok_cap else cap_err))
                check("cap refuses one 2 MiB step more", over_refused,
                      f"torch.empty({cap + 2 * MiB} B): " + ("OutOfMemoryError" if over_refused else "succeeded"))
                torch.cuda.set_per_process_memory_fraction(1.0)

    if "roundup_power2_divisions" in keys:
        tab = rp2_table(keys["roundup_power2_divisions"])
        v = s("roundup_power2_divisions")
        if settings is not None and isinstance(v, dict):
            got = [v[k] for k in sorted(v, key=int)]
            check("roundup_power2_divisions read back", got == tab, f"allocator_settings roundup_power2_divisions={got}, want {tab}")
        if native:
            size = 5 * MiB + 512
            a0 = torch.cuda.memory_allocated()
            z = torch.empty(size, dtype=torch.uint8, device="cuda")
            got = torch.cuda.memory_allocated() - a0
            del z
            want = rp2_round(size, tab)
            check("roundup_power2_divisions behaves", got == want,
                  f"request {size} B: allocated {got} B, want {want} B (512 B rounding alone: {rp2_round(size, [0] * 16)} B)")

    if "expandable_segments" in keys:
        v = s("expandable_segments")
        if settings is not None:
            check("expandable_segments read back", v == expandable, f"allocator_settings expandable_segments={v}")
        if native:
            z = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
            segs = torch.cuda.memory._snapshot()["segments"]
            flags = sorted({bool(sg.get("is_expandable")) for sg in segs})
            del z
            check("segments expandable", flags == [expandable], f"snapshot segments is_expandable values: {flags}")

    if want_backend == "cudaMallocAsync":
        torch.cuda.empty_cache()
        z = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
        del z
        torch.cuda.synchronize()
        kept = torch.cuda.memory_reserved()
        torch.cuda.empty_cache()
        after = torch.cuda.memory_reserved()
        check("pool keeps freed memory until empty_cache", kept >= 256 * MiB and after < 256 * MiB,
              f"after freeing 256 MiB: reserved {kept // MiB} MiB; after empty_cache: {after // MiB} MiB")
        f, cap = spec.get("fraction"), spec.get("cap")
        if f and cap:
            torch.cuda.set_per_process_memory_fraction(float(f))
            ok_cap, over_refused = True, False
            try:
                z = torch.empty(cap, dtype=torch.uint8, device="cuda")
                del z
            except torch.OutOfMemoryError:
                ok_cap = False
            torch.cuda.empty_cache()
            try:
                z = torch.empty(cap + 2 * MiB, dtype=torch.uint8, device="cuda")
                del z
            except torch.OutOfMemoryError:
                over_refused = True
            torch.cuda.set_per_process_memory_fraction(1.0)
            check("fraction cap holds under cudaMallocAsync", ok_cap and over_refused,
                  f"fraction {f}: {cap} B {'ok' if ok_cap else 'refused'}, {cap + 2 * MiB} B {'refused' if over_refused else 'ok'}")

    if keys.get("pinned_use_cuda_host_register") == "True":
        try:
            h = torch.empty(8 * MiB, dtype=torch.uint8, pin_memory=True)
            check("pinned host tensor", h.is_pinned(), "torch.empty(pin_memory=True).is_pinned()")
        except Exception as e:
            check("pinned host tensor", False, f"{type(e).__name__}: {e}")
    for k in ("release_lock_on_cudamalloc", "max_non_split_rounding_mb", "pinned_num_register_threads"):
        if k in keys:
            check(f"{k} accepted", True, "accepted; not read back by allocator_settings")
    return res


def child_direct(spec):
    """PYTORCH_NO_CUDA_MEMORY_CACHING=1: every free a cudaFree; is the fraction cap enforced?"""
    res = {"name": spec["name"], "conf": "", "env": {k: os.environ.get(k) for k in CONF_VARS if k in os.environ}, "checks": []}
    import torch
    res["torch"] = torch.__version__
    z = torch.empty(MiB, dtype=torch.uint8, device="cuda")
    del z
    torch.cuda.synchronize()
    res["accepted"] = True
    free0 = torch.cuda.mem_get_info()[0]
    a = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    free1 = torch.cuda.mem_get_info()[0]
    res["reserved_while_live"] = torch.cuda.memory_reserved()
    del a
    torch.cuda.synchronize()
    free2 = torch.cuda.mem_get_info()[0]
    ok = free0 - free1 >= 256 * MiB and abs(free2 - free0) < 4 * MiB
    res["checks"].append({"check": "free returns memory to the driver", "ok": ok,
                          "detail": f"free MiB: before {free0 // MiB}, 256 MiB live {free1 // MiB}, after del {free2 // MiB}; "
                                    f"memory_reserved() while live: {res['reserved_while_live'] // MiB} MiB"})
    f, cap = spec.get("fraction"), spec.get("cap")
    if f and cap:
        torch.cuda.set_per_process_memory_fraction(float(f))
        try:
            z = torch.empty(2 * cap, dtype=torch.uint8, device="cuda")
            del z
            enforced = False
        except torch.OutOfMemoryError:
            enforced = True
        res["checks"].append({"check": "fraction cap (informational)", "ok": True,
                              "detail": f"fraction {f} (cap {cap} B), torch.empty({2 * cap} B): "
                                        + ("refused: the cap IS enforced" if enforced else "succeeded: the cap is NOT enforced")})
        res["cap_enforced"] = enforced
    return res


# ---------------------------------------------------------------- parent side

def run_case(spec, env_over):
    env = {k: v for k, v in os.environ.items() if k not in CONF_VARS}
    env.update(env_over)
    env["PYTHONUNBUFFERED"] = "1"
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)], env=env,
                           capture_output=True, text=True, timeout=150)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = e.stdout or "", (e.stderr or "") + "\nTIMEOUT", -1
        out = out if isinstance(out, str) else out.decode()
        err = err if isinstance(err, str) else err.decode()
    res = None
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    if res is None:
        res = {"name": spec["name"], "conf": spec["conf"], "accepted": False, "stage": "process",
               "error": f"child exited {rc} without a result", "checks": []}
    res["seconds"] = round(time.time() - t0, 1)
    res["stderr_tail"] = err.strip().splitlines()[-6:]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("confs", nargs="*")
    ap.add_argument("--child")
    ap.add_argument("--fraction")
    ap.add_argument("--cap", type=int)
    ap.add_argument("--bad", action="append", default=[])
    ap.add_argument("--probe", action="append", default=[])
    ap.add_argument("--direct", action="store_true")
    ap.add_argument("--precedence", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--json")
    ap.add_argument("--jobs", type=int, default=4)
    a = ap.parse_args()
    if a.child:
        spec = json.loads(a.child)
        try:
            res = child_direct(spec) if spec.get("mode") == "direct" else child(spec)
        except Exception as e:
            res = {"name": spec["name"], "conf": spec.get("conf"), "accepted": False, "stage": "checks",
                   "error": f"{type(e).__name__}: {e}", "checks": []}
        print("RESULT " + json.dumps(res), flush=True)
        return 0

    both = lambda c: {"PYTORCH_ALLOC_CONF": c, "PYTORCH_CUDA_ALLOC_CONF": c}
    extra = {"fraction": a.fraction, "cap": a.cap}
    cases = [({"name": "baseline (empty conf)", "conf": "", **extra}, both(""), "conf")]
    cases += [({"name": f"conf {i + 1}", "conf": c, **extra}, both(c), "conf") for i, c in enumerate(a.confs)]
    cases += [({"name": f"bad {i + 1}", "conf": c}, both(c), "bad") for i, c in enumerate(a.bad)]
    cases += [({"name": f"probe {i + 1}", "conf": c, "mode": "probe"}, both(c), "probe") for i, c in enumerate(a.probe)]
    if a.precedence:
        cases.append(({"name": "precedence: ALLOC=64, CUDA_ALLOC=128", "conf": "", "mode": "probe"},
                      {"PYTORCH_ALLOC_CONF": "max_split_size_mb:64", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}, "probe"))
        cases.append(({"name": "only PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128", "conf": "", "mode": "probe"},
                      {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}, "probe"))
    serial = []
    if a.direct:
        serial.append(({"name": "direct: PYTORCH_NO_CUDA_MEMORY_CACHING=1", "conf": "", "mode": "direct", **extra},
                       {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, "direct"))

    t0 = time.time()
    results = [None] * (len(cases) + len(serial))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(run_case, spec, env): i for i, (spec, env, _) in enumerate(cases)}
        for fu in concurrent.futures.as_completed(futs):
            results[futs[fu]] = fu.result()
    for j, (spec, env, _) in enumerate(serial):  # alone: it reads the device's free memory
        results[len(cases) + j] = run_case(spec, env)
    kinds = [k for _, _, k in cases + serial]
    envs = [e for _, e, _ in cases + serial]

    lines, all_ok = [], True
    first = next((r for r in results if r.get("torch")), {})
    lines.append(f"# check_conf.py: torch {first.get('torch')}, {first.get('device')}, total_memory {first.get('total_memory')} B, "
                 f"fraction {a.fraction} for cap {a.cap} B, {time.time() - t0:.0f} s")
    for r, kind, env in zip(results, kinds, envs):
        if kind == "bad":
            ok = not r.get("accepted")
            verdict = "REJECTED as it should be" if ok else "ACCEPTED (should have been rejected)"
        elif kind == "probe":
            ok = True
            verdict = "accepted" if r.get("accepted") else "rejected"
        else:
            ok = bool(r.get("accepted")) and all(c["ok"] for c in r["checks"])
            verdict = ("accepted" if r.get("accepted") else "REJECTED") + (", behaves as written" if ok else ", CHECK FAILED")
        all_ok &= ok
        shown = {k: v for k, v in env.items()}
        lines.append(f"\n## {r['name']}: {verdict} [{'PASS' if ok else 'FAIL'}] ({r.get('seconds')} s)")
        lines.append(f"   env: {shown}")
        if not r.get("accepted"):
            lines.append(f"   exception at {r.get('stage')}: {r.get('error')}")
        if r.get("warnings"):
            lines.append(f"   warnings: {r['warnings']}")
        if "allocator_settings" in r:
            lines.append(f"   allocator_settings: {json.dumps(r['allocator_settings'], sort_keys=True)}")
        if "snapshot_error" in r:
            lines.append(f"   snapshot: {r['snapshot_error']}")
        if r.get("backend"):
            lines.append(f"   backend: {r['backend']}")
        for c in r.get("checks", []):
            lines.append(f"   [{'ok' if c['ok'] else 'FAIL'}] {c['check']}: {c['detail']}")
        if r.get("stderr_tail") and (not r.get("accepted") or kind == "probe"):
            lines.append(f"   stderr: {r['stderr_tail'][-3:]}")
    lines.append(f"\n# overall: {'PASS' if all_ok else 'FAIL'}")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.log:
        with open(a.log, "w") as fh:
            fh.write(text)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
