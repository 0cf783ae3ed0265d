"""workloads.py: the allocator library's acceptance loops, under PyTorch's allocator or pagetune's.

    python3 workloads.py train|infer default|pagetune [--conf CONF] [--steps N]
                         [--record PATH] [--snapshot PATH]

train: a GPT-2-style language model (transformers GPT2LMHeadModel, GPT-2
medium's shape: 24 layers, 1024 wide, 16 heads, vocabulary 50257, about 355 M
parameters), random init, AdamW, bf16 autocast, batch 8 x 512 tokens.
infer: the same model in bf16, forward passes over batches of 1-16 x 16-512
tokens (random lengths, fixed seed), the greedy next token of each row.

Deterministic: seeds, torch.use_deterministic_algorithms(True),
CUBLAS_WORKSPACE_CONFIG, eager attention.  Prints one JSON line: the losses
(hex floats) or a hash of the next tokens, every step's time, their median
after two warm-up steps, peak reserved and allocated bytes from whichever
allocator ran.  --record PATH: the library records its requests
(PAGETUNE_RECORD); --snapshot PATH: PyTorch's allocator with memory history,
dumped to PATH (for comparing the two).
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
ap = argparse.ArgumentParser()
ap.add_argument("workload", choices=["train", "infer"])
ap.add_argument("allocator", choices=["default", "pagetune"])
ap.add_argument("--conf", default=None)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--record", default=None)
ap.add_argument("--snapshot", default=None)
a = ap.parse_args()
if a.allocator == "pagetune":
    if a.conf:
        os.environ["PAGETUNE_ALLOC_CONF"] = a.conf
    if a.record:
        os.environ["PAGETUNE_RECORD"] = a.record
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backend", "python"))
    import pagetune_alloc

    served = pagetune_alloc.install()
else:
    served = "PyTorch's allocator"
import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

if a.snapshot and a.allocator == "default":
    torch.cuda.memory._record_memory_history(max_entries=2_000_000)
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
V = 50257
cfg = GPT2Config(vocab_size=V, n_positions=1024, n_embd=1024, n_layer=24, n_head=16, attn_implementation="eager")
model = GPT2LMHeadModel(cfg)
gen = torch.Generator(device="cpu").manual_seed(1)
times, result = [], {}
if a.workload == "train":
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = []
    for _ in range(a.steps):
        ids = torch.randint(0, V, (8, 512), generator=gen).cuda()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss.item()).hex())
        del ids, loss
    result["losses"] = losses
else:
    model = model.to(device="cuda", dtype=torch.bfloat16).eval()
    h = hashlib.sha256()
    with torch.no_grad():
        for _ in range(a.steps):
            b = int(torch.randint(1, 17, (1,), generator=gen))
            s = int(torch.randint(16, 513, (1,), generator=gen))
            ids = torch.randint(0, V, (b, s), generator=gen).cuda()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            nxt = model(input_ids=ids, use_cache=False).logits[:, -1].argmax(-1)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            h.update(nxt.cpu().numpy().tobytes())
            del ids, nxt
    result["outputs_sha256"] = h.hexdigest()
out = {"workload": a.workload, "allocator": a.allocator, "served": served, "conf": a.conf, "steps": a.steps,
       "params": sum(p.numel() for p in model.parameters()), "step_s": times,
       "median_step_s": statistics.median(times[2:]) if len(times) > 2 else statistics.median(times)}
out.update(result)
if a.allocator == "pagetune":
    s = pagetune_alloc.stats(0)
    out.update(peak_reserved_bytes=s["peak_reserved_bytes"], peak_allocated_bytes=s["peak_allocated_bytes"],
               allocs=s["allocs"], stats=s)
else:
    out.update(peak_reserved_bytes=torch.cuda.max_memory_reserved(), peak_allocated_bytes=torch.cuda.max_memory_allocated())
    if a.snapshot:
        torch.cuda.memory._dump_snapshot(a.snapshot)
print(json.dumps(out))
