"""alloc_loop.py: a deterministic training loop on the GPU, under PyTorch's allocator or pagetune's.

    python3 alloc_loop.py default|pagetune [--steps N] [--conf "mechanism=stitch"]

A small transformer (random init, AdamW, bf16 autocast) trained on random
token batches of varying length, so that the allocator sees many sizes.
Deterministic: fixed seeds, torch.use_deterministic_algorithms(True),
CUBLAS_WORKSPACE_CONFIG.  Prints one JSON line: the losses (as hex floats,
so equality is exact), the median step time, and peak reserved bytes from
whichever allocator ran (PyTorch's counters, or pagetune_alloc.stats()).
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

ap = argparse.ArgumentParser()
ap.add_argument("allocator", choices=["default", "pagetune"])
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--conf", default=None, help="PAGETUNE_ALLOC_CONF for the library")
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--layers", type=int, default=6)
a = ap.parse_args()

if a.allocator == "pagetune":
    if a.conf:
        os.environ["PAGETUNE_ALLOC_CONF"] = a.conf
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backend", "python"))
    import pagetune_alloc

    served = pagetune_alloc.install()
else:
    served = "PyTorch's allocator"

import torch  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
vocab, width, heads = 8192, a.width, 8
emb = torch.nn.Embedding(vocab, width)
layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True)
body = torch.nn.TransformerEncoder(layer, a.layers)
head = torch.nn.Linear(width, vocab)
model = torch.nn.Sequential(emb, body, head).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
gen = torch.Generator(device="cpu").manual_seed(1)
losses, times = [], []
for step in range(a.steps):
    seq = int(torch.randint(32, 384, (1,), generator=gen))
    batch = int(torch.randint(4, 17, (1,), generator=gen))
    x = torch.randint(0, vocab, (batch, seq + 1), generator=gen).to(dev)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, vocab), x[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
    losses.append(float(loss.item()).hex())
out = {"allocator": a.allocator, "served": served, "conf": a.conf, "steps": a.steps, "losses": losses,
       "median_step_s": statistics.median(times[5:]) if len(times) > 5 else statistics.median(times)}
if a.allocator == "pagetune":
    s = pagetune_alloc.stats(0)
    out.update(peak_reserved_bytes=s["peak_reserved_bytes"], peak_allocated_bytes=s["peak_allocated_bytes"], stats=s)
else:
    out.update(peak_reserved_bytes=torch.cuda.max_memory_reserved(), peak_allocated_bytes=torch.cuda.max_memory_allocated())
print(json.dumps(out))
