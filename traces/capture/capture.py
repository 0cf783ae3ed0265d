#!/usr/bin/env python3
"""Capture real PyTorch CUDA caching-allocator snapshots for pagetune.

Two modes:

  capture.py --out DIR [--only NAME,...] [--deadline S] [--jobs N]
      Driver. Imports no torch. Runs every workload in its OWN subprocess
      (so PYTORCH_CUDA_ALLOC_CONF is set before CUDA initialises), then for
      each snapshot: loads it back with plain pickle (checks it is plain
      data), counts trace entries by action, gzips it (gzip -9 -n) and
      completes the JSON sidecar.

  capture.py --worker WORKLOAD --name NAME --out DIR [--fraction F]
             [--impl hf|torch] [--no-record]
      Worker. Seeds torch, starts torch.cuda.memory._record_memory_history
      (before the first CUDA allocation, except for workloads marked
      record_late), runs the workload, synchronises, dumps the snapshot to
      DIR/NAME.pickle and writes DIR/NAME.json (sidecar).  --no-record runs
      the workload alone (no memory history, no snapshot), as `pagetune
      confirm` runs it, under PyTorch's allocator or pagetune's library (where
      torch.cuda.memory_stats() is not supported: the sidecar says so).  Under
      `pagetune confirm` the workloads' loops mark their step boundaries
      (pagetune_confirm.step(); outside confirm the module is absent or does
      nothing).

Output per trace: NAME.pickle.gz, NAME.json, NAME.log (worker output).

With PT_GPU_FREES=1 a worker also measures when the GPU passed each free (gpufrees.py: a trace
tracker on PyTorch's allocator, built once with torch.utils.cpp_extension into PT_GPU_FREES_BUILD,
default /tmp/pagetune_gpu_frees) and writes DIR/NAME.gpufrees.gz, for `pagetune trace import
--gpu-frees` (the sidecar's gpu_frees_error says why when it could not), and beside it
NAME.gpufrees.times.gz: every request's and free's time in microseconds, with the native
allocator's cudaMalloc stalls when traces/capture/async_probe/shim.c is preloaded.  For a
cudaMallocAsync prediction, time the workload again with --no-record and move that run's free
times to a cudaMallocAsync run's timeline on the recorded snapshot (async_timeline.py --on;
traces/capture/async_timed_on_device.sh with UNRECORDED=1 does all of it; docs/model.md).
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.abspath(__file__)

try:  # under `pagetune confirm` (its hook's folder on PYTHONPATH): the workloads' step boundaries
    import pagetune_confirm as _confirm
except ImportError:
    _confirm = None


def _step():
    """A step boundary for `pagetune confirm`'s step times; nothing otherwise."""
    if _confirm is not None:
        _confirm.step()

# ----------------------------------------------------------------------------
# Workloads (worker side).  Each takes (torch, impl) and returns a dict of
# extra facts for the sidecar.  Models are randomly initialised; nothing is
# downloaded.
# ----------------------------------------------------------------------------


def _mini_gpt(torch, vocab, d, heads, ff, layers, maxpos):
    """Plain-PyTorch GPT used when transformers is unusable (impl=torch)."""
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, ff)
            self.fc2 = nn.Linear(ff, d)

        def forward(self, x, cache=None):
            B, T, D = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
            q = q.view(B, T, heads, D // heads).transpose(1, 2)
            k = k.view(B, T, heads, D // heads).transpose(1, 2)
            v = v.view(B, T, heads, D // heads).transpose(1, 2)
            if cache is not None:
                if "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
            y = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
            y = y.transpose(1, 2).reshape(B, T, D)
            x = x + self.proj(y)
            x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
            return x

    class MiniGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(maxpos, d)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.lnf = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx, caches=None, pos0=0):
            B, T = idx.shape
            pos = torch.arange(pos0, pos0 + T, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for i, b in enumerate(self.blocks):
                x = b(x, None if caches is None else caches[i])
            return self.head(self.lnf(x))

    return MiniGPT()


def wl_randn_loop(torch, impl):
    # Recording starts after the allocations made in pre_randn_loop.
    for _ in range(1000):
        torch.randn(1024, 1024, device="cuda")
    return {"iterations": 1000}


def pre_randn_loop(torch):
    """Allocations made BEFORE recording starts: the snapshot's initial state."""
    keep_small = torch.empty(1000, device="cuda")            # small pool, 2 MiB segment
    keep_big = torch.empty(3 * 2**20 // 4, device="cuda")    # 3 MiB in a 20 MiB segment
    tmp = torch.empty(5 * 2**20 // 4, device="cuda")         # 5 MiB, freed: cached block
    keep_huge = torch.empty(12 * 2**20 // 4, device="cuda")  # 12 MiB: its own segment
    del tmp
    torch.cuda.synchronize()
    return [keep_small, keep_big, keep_huge]


def wl_cnn_train(torch, impl):
    nn = torch.nn
    info = {}
    if impl == "hf":
        import torchvision
        model = torchvision.models.resnet18(weights=None, num_classes=100)
        info["model"] = "torchvision resnet18(weights=None, num_classes=100)"
        info["torchvision_version"] = torchvision.__version__
    else:
        model = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
            nn.Conv2d(64, 128, 3, 2, 1), nn.BatchNorm2d(128), nn.ReLU(),
            nn.Conv2d(128, 256, 3, 2, 1), nn.BatchNorm2d(256), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100))
        info["model"] = "plain torch 3-conv CNN (fallback)"
    model = model.cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    steps, batch, res = 5, 32, 224
    _step()
    for _ in range(steps):
        x = torch.randn(batch, 3, res, res, device="cuda")
        y = torch.randint(0, 100, (batch,), device="cuda")
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, y, loss
        _step()
    info.update(steps=steps, batch=batch, resolution=res, optimizer="SGD(momentum=0.9)")
    return info


def wl_transformer_train(torch, impl):
    info = {}
    V, D, L, H, S, B, steps = 8192, 384, 6, 6, 256, 8, 6
    if impl == "hf":
        import transformers
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(vocab_size=V, n_positions=512, n_embd=D, n_layer=L, n_head=H)
        model = GPT2LMHeadModel(cfg)
        info["model"] = f"transformers GPT2LMHeadModel(n_layer={L}, n_embd={D}, n_head={H}, vocab={V})"
        info["transformers_version"] = transformers.__version__
    else:
        model = _mini_gpt(torch, V, D, H, 4 * D, L, 512)
        info["model"] = f"plain torch mini GPT (fallback) L={L} D={D}"
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    F = torch.nn.functional
    _step()
    for _ in range(steps):
        ids = torch.randint(0, V, (B, S), device="cuda")
        if impl == "hf":
            loss = model(input_ids=ids, labels=ids).loss
        else:
            logits = model(ids)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
            del logits
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del ids, loss
        _step()
    info.update(steps=steps, batch=B, seq_len=S, optimizer="AdamW", dtype="float32")
    return info


def wl_varlen_infer(torch, impl):
    import random
    info = {}
    V, D, L, H = 16384, 512, 4, 8
    if impl == "hf":
        import transformers
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(vocab_size=V, n_positions=1024, n_embd=D, n_layer=L, n_head=H)
        model = GPT2LMHeadModel(cfg)
        info["model"] = f"transformers GPT2LMHeadModel(n_layer={L}, n_embd={D}, n_head={H}, vocab={V})"
        info["transformers_version"] = transformers.__version__
    else:
        model = _mini_gpt(torch, V, D, H, 4 * D, L, 1024)
        info["model"] = f"plain torch mini GPT (fallback) L={L} D={D}"
    model = model.to(device="cuda", dtype=torch.bfloat16).eval()
    rng = random.Random(0)
    shapes = []
    steps = 24
    with torch.no_grad():
        _step()
        for _ in range(steps):
            B = rng.randint(1, 16)
            S = rng.randint(16, 512)
            shapes.append([B, S])
            ids = torch.randint(0, V, (B, S), device="cuda")
            if impl == "hf":
                logits = model(input_ids=ids, use_cache=False).logits
            else:
                logits = model(ids)
            nxt = logits[:, -1].argmax(-1)
            del ids, logits, nxt
            _step()
    info.update(steps=steps, dtype="bfloat16", shapes_batch_seq=shapes,
                note="prefill-style forward, full logits, batch 1..16, seq 16..512, random.Random(0)")
    return info


def wl_llm_decode(torch, impl):
    info = {}
    V, D, L, B, P, N = 8192, 256, 2, 4, 32, 200
    if impl == "hf":
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(vocab_size=V, hidden_size=D, intermediate_size=704,
                          num_hidden_layers=L, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=1024)
        model = LlamaForCausalLM(cfg)
        info["model"] = f"transformers LlamaForCausalLM(layers={L}, hidden={D}, heads=4, kv_heads=2, vocab={V})"
        info["transformers_version"] = transformers.__version__
    else:
        model = _mini_gpt(torch, V, D, 4, 4 * D, L, 1024)
        info["model"] = f"plain torch mini GPT with torch.cat KV cache (fallback) L={L} D={D}"
    model = model.to(device="cuda", dtype=torch.bfloat16).eval()
    with torch.no_grad():
        ids = torch.randint(0, V, (B, P), device="cuda")
        if impl == "hf":
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            del out
            _step()
            for _ in range(N):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
                del out
                _step()
            info["cache_type"] = type(past).__name__
        else:
            caches = [dict() for _ in range(L)]
            logits = model(ids, caches, 0)
            tok = logits[:, -1:].argmax(-1)
            del logits
            for i in range(N):
                logits = model(tok, caches, P + i)
                tok = logits[:, -1:].argmax(-1)
                del logits
            past = caches
        del past, tok, ids
    info.update(batch=B, prompt_len=P, new_tokens=N, dtype="bfloat16",
                loop="manual greedy loop with past_key_values (growing KV cache)")
    return info


def wl_long_decode(torch, impl):
    """Issue 12's long decode: a 16-layer Llama (hidden 1024, 8 KV heads of 128), five sequences one after
    another, each of its own batch (4-16), prompt (64-512 tokens) and length (300-500 new tokens), greedy with
    the growing DynamicCache: millions of records, the caches of each sequence left as holes for the next."""
    import random
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    rng = random.Random(1205)
    V, D, L = 8192, 1024, 16
    cfg = LlamaConfig(vocab_size=V, hidden_size=D, intermediate_size=2816, num_hidden_layers=L,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048)
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    seqs = []
    with torch.no_grad():
        for _ in range(int(os.environ.get("LONG_DECODE_SEQS", "5"))):
            B, P, N = rng.randrange(4, 17), rng.randrange(64, 513), rng.randrange(300, 501)
            seqs.append((B, P, N))
            ids = torch.randint(0, V, (B, P), device="cuda")
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            del out
            for _ in range(N):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
                del out
            del past, tok, ids
            _step()
    return {"model": f"transformers LlamaForCausalLM(layers={L}, hidden={D}, heads=8, kv_heads=8, vocab={V})",
            "transformers_version": transformers.__version__, "sequences_batch_prompt_new": seqs,
            "dtype": "bfloat16", "loop": "greedy with past_key_values, one sequence after another"}


def wl_long_decode_frag(torch, impl):
    """Issue 12's fragmented long decode, in the shape `pagetune trace gen --kind long_decode` makes: one
    greedy decode of a 7B-class Llama (hidden 4096, 32 heads, 8 KV heads of 128, MLP 11008; layers, batch
    and prompt drawn from random.Random(LONG_DECODE_SEED, default 1206)), the prompt prefilled
    LONG_DECODE_CHUNK (16) tokens at a time through the growing DynamicCache, then LONG_DECODE_STEPS (1024)
    tokens.  Each cache tensor is remade a token longer every step and the old one freed, so the large
    pool fills with holes no later cache fits: thousands of segments.  Weights are made on the GPU in
    bfloat16 (random, nothing downloaded)."""
    import random
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    rng = random.Random(int(os.environ.get("LONG_DECODE_SEED", "1206")))
    L = int(os.environ.get("LONG_DECODE_LAYERS", "0")) or rng.randrange(24, 41)
    B, P = rng.randrange(8, 17), rng.randrange(512, 1537)
    N = int(os.environ.get("LONG_DECODE_STEPS", "1024"))
    C = int(os.environ.get("LONG_DECODE_CHUNK", "16"))
    V, D = 8192, 4096
    cfg = LlamaConfig(vocab_size=V, hidden_size=D, intermediate_size=11008, num_hidden_layers=L,
                      num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=P + N + 16)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg).eval()
    finally:
        torch.set_default_dtype(old)
    with torch.no_grad():
        ids = torch.randint(0, V, (B, P), device="cuda")
        past = None
        for t in range(0, P, C):
            out = model(input_ids=ids[:, t:t + C], past_key_values=past, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            del out
        del ids
        for _ in range(N):
            out = model(input_ids=tok, past_key_values=past, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            del out
        del past, tok
        _step()
    return {"model": f"transformers LlamaForCausalLM(layers={L}, hidden={D}, heads=32, kv_heads=8, "
                     f"intermediate=11008, vocab={V})", "transformers_version": transformers.__version__,
            "batch": B, "prompt": P, "prefill_chunk": C, "new_tokens": N, "dtype": "bfloat16",
            "seed": int(os.environ.get("LONG_DECODE_SEED", "1206"))}


def wl_long_decode_cat(torch, impl):
    """Issue 12's fragmented long decode, written the way many inference loops are (nanoGPT-style, and
    Hugging Face's DynamicCache before it preallocated): a 7B-class Llama layer stack in plain torch
    (hidden 4096, 32 heads, 8 KV heads of 128, MLP 11008, RMSNorm, rotary, SDPA with grouped KV) whose
    KV cache grows by torch.cat, a new tensor a token longer each step and the old one freed.  Each time
    the caches cross a 2 MiB rounding step, every layer's K and V need a larger segment and leave their
    old ones free: thousands of segments.  Layers, batch and prompt from random.Random(LONG_DECODE_SEED,
    default 1208); the prompt prefilled LONG_DECODE_CHUNK (64) tokens at a time, then LONG_DECODE_STEPS
    (2048) tokens.  Random bfloat16 weights made on the GPU (nothing downloaded)."""
    import random
    F = torch.nn.functional
    seed = int(os.environ.get("LONG_DECODE_SEED", "1208"))
    rng = random.Random(seed)
    L = int(os.environ.get("LONG_DECODE_LAYERS", "0")) or rng.randrange(28, 37)
    B, P = rng.randrange(8, 13), rng.randrange(512, 1025)
    N = int(os.environ.get("LONG_DECODE_STEPS", "2048"))
    C = int(os.environ.get("LONG_DECODE_CHUNK", "64"))
    V, D, H, KV, HD, I = 8192, 4096, 32, 8, 128, 11008
    g = torch.Generator(device="cuda").manual_seed(seed)
    bf = torch.bfloat16

    def w(*shape):
        return (torch.randn(*shape, device="cuda", generator=g, dtype=bf) * 0.02)

    emb, head = w(V, D), w(V, D)
    layers = [dict(q=w(H * HD, D), k=w(KV * HD, D), v=w(KV * HD, D), o=w(D, H * HD),
                   gate=w(I, D), up=w(I, D), down=w(D, I),
                   n1=torch.ones(D, device="cuda", dtype=bf), n2=torch.ones(D, device="cuda", dtype=bf))
              for _ in range(L)]
    inv = 1.0 / (10000.0 ** (torch.arange(0, HD, 2, device="cuda", dtype=torch.float32) / HD))

    def norm(x, wt):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(bf) * wt

    def rope(x, cos, sin):
        x1, x2 = x[..., :HD // 2], x[..., HD // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def forward(ids, pos0, cache):
        T = ids.shape[1]
        x = F.embedding(ids, emb)
        t = torch.arange(pos0, pos0 + T, device="cuda", dtype=torch.float32)
        f = torch.outer(t, inv)
        e = torch.cat((f, f), dim=-1)
        cos, sin = e.cos().to(bf)[None, None], e.sin().to(bf)[None, None]
        for li, ly in enumerate(layers):
            h = norm(x, ly["n1"])
            q = F.linear(h, ly["q"]).view(B, T, H, HD).transpose(1, 2)
            k = F.linear(h, ly["k"]).view(B, T, KV, HD).transpose(1, 2)
            v = F.linear(h, ly["v"]).view(B, T, KV, HD).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            if cache[li] is None:
                cache[li] = (k.contiguous(), v.contiguous())
            else:
                cache[li] = (torch.cat((cache[li][0], k), dim=2), torch.cat((cache[li][1], v), dim=2))
            a = F.scaled_dot_product_attention(q, cache[li][0], cache[li][1], is_causal=T > 1 and pos0 == 0,
                                               enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(B, T, H * HD), ly["o"])
            h = norm(x, ly["n2"])
            x = x + F.linear(F.silu(F.linear(h, ly["gate"])) * F.linear(h, ly["up"]), ly["down"])
        return F.linear(norm(x, layers[-1]["n2"])[:, -1:], head)

    with torch.no_grad():
        cache = [None] * L
        ids = torch.randint(0, V, (B, P), device="cuda", generator=g)
        for t in range(0, P, C):
            logits = forward(ids[:, t:t + C], t, cache)
        tok = logits.argmax(-1)
        del ids, logits
        for s in range(N):
            logits = forward(tok, P + s, cache)
            tok = logits.argmax(-1)
            del logits
        del cache, tok
        _step()
    return {"model": f"plain-torch Llama layers={L} hidden={D} heads={H} kv_heads={KV} intermediate={I} "
                     f"vocab={V}, KV cache grown by torch.cat", "batch": B, "prompt": P, "prefill_chunk": C,
            "new_tokens": N, "dtype": "bfloat16", "seed": seed}


def wl_weights_load(torch, impl):
    # A 24-layer Llama-like (with q/k/v biases) state_dict built on CPU, then
    # copied to the GPU tensor by tensor (fp32), then cast to bf16 one tensor
    # at a time (the fp32 copy freed after each cast).
    Lyr, H, KV, I, V = 24, 1024, 256, 2816, 32000
    sd = {"model.embed_tokens.weight": torch.empty(V, H)}
    for i in range(Lyr):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = torch.empty(H)
        sd[p + "self_attn.q_proj.weight"] = torch.empty(H, H)
        sd[p + "self_attn.q_proj.bias"] = torch.empty(H)
        sd[p + "self_attn.k_proj.weight"] = torch.empty(KV, H)
        sd[p + "self_attn.k_proj.bias"] = torch.empty(KV)
        sd[p + "self_attn.v_proj.weight"] = torch.empty(KV, H)
        sd[p + "self_attn.v_proj.bias"] = torch.empty(KV)
        sd[p + "self_attn.o_proj.weight"] = torch.empty(H, H)
        sd[p + "post_attention_layernorm.weight"] = torch.empty(H)
        sd[p + "mlp.gate_proj.weight"] = torch.empty(I, H)
        sd[p + "mlp.up_proj.weight"] = torch.empty(I, H)
        sd[p + "mlp.down_proj.weight"] = torch.empty(H, I)
    sd["model.norm.weight"] = torch.empty(H)
    sd["lm_head.weight"] = torch.empty(V, H)
    gpu = {}
    for k, t in sd.items():
        gpu[k] = t.to("cuda")
    torch.cuda.synchronize()
    for k in list(gpu):
        gpu[k] = gpu[k].to(torch.bfloat16)
    torch.cuda.synchronize()
    nbytes = sum(t.numel() * 4 for t in sd.values())
    return {"tensors": len(sd), "fp32_bytes": nbytes,
            "phases": "1) copy each fp32 CPU tensor to cuda; 2) cast each to bf16, dropping the fp32 copy",
            "shape": f"{Lyr} layers, hidden {H}, kv {KV}, ffn {I}, vocab {V}"}


def wl_two_streams(torch, impl):
    import random
    rng = random.Random(0)
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    w = torch.randn(1024, 1024, device="cuda")
    acc = torch.zeros(1024, device="cuda")
    iters = 300
    has_sleep = hasattr(torch.cuda, "_sleep")
    for _ in range(iters):
        n = rng.choice([256, 512, 1024, 2048, 4096])
        x = torch.randn(n, 1024, device="cuda")           # allocated on the main stream
        side.wait_stream(main)
        with torch.cuda.stream(side):
            if has_sleep:
                torch.cuda._sleep(50000)                   # keep the side stream busy
            y = torch.relu(x @ w)                          # allocated on the side stream
            x.record_stream(side)                          # x's free waits for side work
            s = y.sum(0)
        del x                                              # deferred free (cross-stream)
        main.wait_stream(side)
        y.record_stream(main)
        s.record_stream(main)
        acc += s
        t = y[:16].clone()                                 # main-stream alloc
        del y, s, t                                        # side-stream blocks freed after main work
    torch.cuda.synchronize()
    return {"iterations": iters, "side_stream": int(side.cuda_stream), "used_cuda_sleep": has_sleep,
            "pattern": "x on main, record_stream(side); y,s on side, record_stream(main)"}


def wl_graph_pool(torch, impl):
    """A CUDA graph captured and replayed (its private memory pool) amid eager allocations, then
    the graph dropped (its pool's segments go back) and eager work again."""
    lin1 = torch.nn.Linear(1024, 4096).cuda()
    lin2 = torch.nn.Linear(4096, 1024).cuda()
    static_x = torch.randn(64, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs asks
            y = lin2(torch.relu(lin1(static_x)))
    torch.cuda.current_stream().wait_stream(s)
    del y
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_y = lin2(torch.relu(lin1(static_x)))
    for i in range(20):
        static_x.copy_(torch.randn(64, 1024, device="cuda"))
        g.replay()
        eager = [torch.randn(256, 1024 * (1 + i % 4), device="cuda") for _ in range(4)]
        del eager
    torch.cuda.synchronize()
    del g, static_y
    torch.cuda.synchronize()
    for i in range(10):
        t = torch.randn(512, 2048 * (1 + i % 3), device="cuda")
        del t
    torch.cuda.synchronize()
    return {"graph": "Linear(1024,4096)+relu+Linear(4096,1024) on 64x1024, captured once, replayed 20x",
            "eager": "4 randn of 256 x 1-4 K per replay; 10 after the graph is dropped"}



# ----------------------------------------------------------------------------
# Knob workloads (issue 12): allocation plans whose results depend on one knob.
# A plan is a list of ("a", key, nbytes) / ("f", key) steps, made without torch
# (random.Random(seed)), so the same plan runs on the GPU (_run_plan) and, as a
# native trace, through the model on a CPU (capture.py --plan NAME writes it).
# Requests are exact byte counts (torch.empty(n, dtype=uint8)), so the
# requested sizes in the snapshot are the plan's.
# ----------------------------------------------------------------------------

MiB = 1 << 20
CAP_BYTES = [None]  # the worker's memory cap (bytes), when --fraction is given


def _window_plan(rng, steps, draw, live_max=None, live_bytes=None):
    """STEPS allocations of DRAW(rng) bytes; after each, frees random live tensors while
    more than LIVE_MAX are live or their bytes exceed LIVE_BYTES; the rest freed at the end."""
    plan, live, total = [], [], 0
    for k in range(steps):
        n = draw(rng)
        plan.append(("a", k, n))
        live.append((k, n))
        total += n
        while live and ((live_max is not None and len(live) > live_max) or
                        (live_bytes is not None and total > live_bytes and len(live) > 1)):
            i = rng.randrange(len(live) - 1)  # never the newest: it is in use
            key, m = live.pop(i)
            plan.append(("f", key))
            total -= m
    for key, _ in live:
        plan.append(("f", key))
    return plan


def plan_rp2_sizes():
    """Sizes in every interval whose divisions differ under [256:1,512:2,1024:4,>:8]: below
    512 MiB (1: 512-byte rounding only), [512 MiB, 1 GiB) (2), [1, 2) GiB (4), 2-4 GiB (8);
    at most 4 live, so freed blocks are reused or not depending on how they were rounded."""
    import random
    rng = random.Random(1201)
    bands = [(64 * MiB, 512 * MiB), (512 * MiB, 1024 * MiB), (1024 * MiB, 2048 * MiB),
             (2048 * MiB, 4096 * MiB)]

    def draw(r):
        lo, hi = bands[r.randrange(len(bands))]
        return r.randrange(lo, hi)
    return _window_plan(rng, 80, draw, live_max=4)


def plan_kv_grow():
    """Three sequences decoded one after another, each a KV cache grown by concatenation (new =
    cat(old, step): the new one allocated before the old is freed) from 300 MiB to 2.3 GiB,
    128-136 MiB a step, with a per-step activation of 20-120 MiB: whether a cache freed in one
    sequence is reused by a later one depends on how far each was rounded up."""
    import random
    rng = random.Random(1202)
    plan, key = [], 0
    for _ in range(3):
        size = 300 * MiB + rng.randrange(0, 1 << 16)
        cur = None
        while size < 2300 * MiB:
            act = rng.randrange(20 * MiB, 120 * MiB)
            plan.append(("a", key, act)); a_key = key; key += 1
            plan.append(("a", key, size)); new = key; key += 1
            if cur is not None:
                plan.append(("f", cur))
            plan.append(("f", a_key))
            cur = new
            size += 128 * MiB + rng.randrange(0, 8 * MiB)
        plan.append(("f", cur))
    return plan


def plan_exp_mix():
    """Log-uniform sizes from 512 KiB to 400 MiB, at most 6 live, freed in random order: holes
    in the middle of the expandable segment (free blocks with live ones after them), so
    max_split_size_mb (a large hole refused to a small request) and the rounding (which hole
    a request fits, how many 20 MiB pages a growth maps) change the maps and the peak."""
    import math
    import random
    rng = random.Random(1203)

    def draw(r):
        return int(math.exp(r.uniform(math.log(512 * 1024), math.log(400 * MiB))))
    return _window_plan(rng, 400, draw, live_max=6)


def plan_exp_cap():
    """Under a cap (CAP_BYTES, default 2 GiB): sizes 8-300 MiB, live bytes kept under 0.6 of the
    cap, freed in random order: fragmentation grows the segment to the cap, the allocator's
    retry unmaps the free pages (several ranges), and the run goes on."""
    import random
    rng = random.Random(1204)
    cap = CAP_BYTES[0] or 2 * 1024 * MiB

    def draw(r):
        return r.randrange(8 * MiB, 300 * MiB)
    return _window_plan(rng, 300, draw, live_bytes=int(cap * 0.6))


PLANS = {"rp2_sizes": plan_rp2_sizes, "kv_grow": plan_kv_grow, "exp_mix": plan_exp_mix,
         "exp_cap": plan_exp_cap}


def _run_plan(torch, name):
    plan = PLANS[name]()
    live, ooms = {}, []
    for i, step in enumerate(plan):
        if step[0] == "a":
            try:
                live[step[1]] = torch.empty(step[2], dtype=torch.uint8, device="cuda")
            except torch.OutOfMemoryError:  # recorded in the snapshot (oom); the plan goes on
                ooms.append(i)
        else:
            live.pop(step[1], None)
    torch.cuda.synchronize()
    allocs = [s[2] for s in plan if s[0] == "a"]
    return {"plan": name, "allocations": len(allocs), "requested_bytes": sum(allocs),
            "largest": max(allocs), "cap_bytes": CAP_BYTES[0], "oom_steps": ooms}


def write_plan_trace(name, path):
    """The plan as a native pagetune trace (requests only, stream 0, 1 us apart)."""
    plan = PLANS[name]()
    ids, nrec = {}, 0
    with open(path, "w") as f:
        f.write("pagetune-trace 1\n@source capture.py --plan %s\n@device 0\n" % name)
        for t, step in enumerate(plan):
            if step[0] == "a":
                ids[step[1]] = len(ids) + 1
                f.write("a %d %d 0x0 %d\n" % (ids[step[1]], step[2], t))
            else:
                f.write("f %d %d\n" % (ids[step[1]], t))
            nrec += 1
        f.write("end %d\n" % nrec)


def wl_rp2_sizes(torch, impl):
    return _run_plan(torch, "rp2_sizes")


def wl_kv_grow(torch, impl):
    return _run_plan(torch, "kv_grow")


def wl_exp_mix(torch, impl):
    return _run_plan(torch, "exp_mix")


def wl_exp_cap(torch, impl):
    return _run_plan(torch, "exp_cap")


WORKLOADS = {
    "randn_loop": dict(fn=wl_randn_loop, pre=pre_randn_loop, fallback=False,
                       desc="1000 x torch.randn(1024, 1024, device='cuda'), each result dropped; "
                            "recording starts after 4 tensors were allocated and one freed "
                            "(initial segments with no segment_alloc in the trace)"),
    "cnn_train": dict(fn=wl_cnn_train, fallback=True,
                      desc="torchvision resnet18 (random init), 5 SGD steps, batch 32, 3x224x224, fp32"),
    "transformer_train": dict(fn=wl_transformer_train, fallback=True,
                              desc="GPT-2 from config (6 layers, d=384, vocab 8192), AdamW, 6 steps, batch 8 x 256, fp32"),
    "varlen_infer": dict(fn=wl_varlen_infer, fallback=True,
                         desc="GPT-2 from config (4 layers, d=512, vocab 16384), bf16, torch.no_grad, "
                              "24 forwards with random batch 1..16 and seq 16..512 (random.Random(0))"),
    "llm_decode": dict(fn=wl_llm_decode, fallback=True,
                       desc="Llama from config (2 layers, hidden 256, GQA 4/2, vocab 8192), bf16, "
                            "prefill 4x32 then 200 greedy tokens with growing KV cache (past_key_values)"),
    "weights_load": dict(fn=wl_weights_load, fallback=False,
                         desc="24-layer Llama-like state_dict (291 tensors, ~1.3 GB fp32, uninitialised values) copied CPU->cuda "
                              "tensor by tensor, then each cast to bf16 on the GPU"),
    "graph_pool": dict(fn=wl_graph_pool, fallback=False,
                       desc="a CUDA graph (Linear+relu+Linear) captured and replayed 20 times among eager "
                            "allocations, then dropped, then eager allocations again (issue 12: graph pools)"),
    "rp2_sizes": dict(fn=wl_rp2_sizes, fallback=False,
                      desc="80 uint8 tensors of 64 MiB-4 GiB (every interval of [256:1,512:2,1024:4,>:8]), "
                           "at most 4 live, random frees (plan_rp2_sizes, random.Random(1201))"),
    "kv_grow": dict(fn=wl_kv_grow, fallback=False,
                    desc="three sequences, each a KV cache grown by concatenation from 300 MiB to 2.3 GiB, "
                         "128-136 MiB a step, with an activation of 20-120 MiB a step (plan_kv_grow, random.Random(1202))"),
    "exp_mix": dict(fn=wl_exp_mix, fallback=False,
                    desc="400 uint8 tensors, log-uniform 512 KiB-400 MiB, at most 6 live, random frees "
                         "(plan_exp_mix, random.Random(1203))"),
    "exp_cap": dict(fn=wl_exp_cap, fallback=False,
                    desc="300 uint8 tensors of 8-300 MiB, live bytes under 0.6 of the cap, random frees "
                         "(plan_exp_cap, random.Random(1204)); run under a memory fraction"),
    "long_decode": dict(fn=wl_long_decode, fallback=False,
                        desc="five greedy decodes of a 16-layer Llama (hidden 1024) one after another, batch 4-16, "
                             "prompt 64-512, 300-500 new tokens each (random.Random(1205)): issue 12's long trace"),
    "long_decode_frag": dict(fn=wl_long_decode_frag, fallback=False,
                             desc="one greedy decode of a 7B-class Llama (hidden 4096, 24-40 layers), batch 8-16, "
                                  "a 512-1536-token prompt prefilled 16 tokens at a time, then 1024 tokens "
                                  "(random.Random(LONG_DECODE_SEED=1206)): issue 12's fragmented long trace"),
    "long_decode_cat": dict(fn=wl_long_decode_cat, fallback=False,
                            desc="a 7B-class Llama decode in plain torch, 28-36 layers, batch 8-12, 512-1024-token "
                                 "prompt, 2048 new tokens, KV cache grown by torch.cat "
                                 "(random.Random(LONG_DECODE_SEED=1208)): issue 12's fragmented long trace"),
    "two_streams": dict(fn=wl_two_streams, fallback=False,
                        desc="300 iterations: tensors made on the main stream used on a side stream "
                             "(record_stream) and vice versa, so frees are deferred across streams"),
}

STAT_KEYS = [
    "num_alloc_retries", "num_ooms", "num_sync_all_streams",
    "num_device_alloc", "num_device_free",
    "segment.all.allocated", "segment.all.freed", "segment.all.current", "segment.all.peak",
    "reserved_bytes.all.peak", "reserved_bytes.all.current",
    "allocated_bytes.all.peak", "allocated_bytes.all.current",
    "requested_bytes.all.peak",
    "active.all.allocated", "allocation.all.allocated",
    "oversize_allocations.allocated", "oversize_segments.allocated",
]


def _pick_stats(stats):
    return {k: int(stats[k]) for k in STAT_KEYS if k in stats}


def _allocator_stats(torch, meta):
    """torch.cuda.memory_stats(), or {} under a pluggable allocator (pagetune's library, under
    `pagetune confirm`), which does not support it: said in the sidecar."""
    try:
        return torch.cuda.memory_stats()
    except RuntimeError as e:
        meta["allocator_stats_error"] = str(e)[:300]
        return {}


def _allocator_peak(torch, fn):
    try:
        return int(fn())
    except RuntimeError:
        return None


MAX_ENTRIES = int(os.environ.get("MAX_ENTRIES", "2000000"))  # the history's ring (long_decode: more)


def start_recording(torch):
    """_record_memory_history with the smallest setting that records every action."""
    import inspect
    fn = torch.cuda.memory._record_memory_history
    try:
        params = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = set()
    attempts = [
        dict(enabled="all", context=None, stacks="python", max_entries=MAX_ENTRIES),
        dict(enabled="all", context=None, max_entries=MAX_ENTRIES),
        dict(enabled="all", context="alloc", stacks="python", max_entries=MAX_ENTRIES),
        dict(enabled="all", max_entries=MAX_ENTRIES),
    ]
    errors = []
    for kw in attempts:
        kw = {k: v for k, v in kw.items() if not params or k in params or k == "enabled"}
        try:
            fn(**kw)
            return {"record_kwargs": {k: v for k, v in kw.items()},
                    "record_signature": sorted(params), "record_errors": errors}
        except Exception as e:  # noqa: BLE001
            errors.append(f"{kw}: {type(e).__name__}: {e}")
    raise RuntimeError("could not start memory history: " + "; ".join(errors))


def _start_gpu_frees(meta):
    """With PT_GPU_FREES=1: when the GPU passed each free, in requests (gpufrees.py), for
    `trace import --gpu-frees`."""
    if os.environ.get("PT_GPU_FREES") != "1":
        return None
    sys.path.insert(0, os.path.dirname(HERE))
    import gpufrees
    g = gpufrees.start(os.environ.get("PT_GPU_FREES_BUILD", "/tmp/pagetune_gpu_frees"))
    if isinstance(g, str):
        meta["gpu_frees_error"] = g
        return None
    return g


def _stop_gpu_frees(g, path, meta):
    if g is None:
        return
    import gpufrees
    failed = gpufrees.stop(g, path)
    if failed < 0:
        meta["gpu_frees_error"] = "cannot write " + path
        return
    meta["gpu_frees_failed_events"] = failed
    subprocess.run(["gzip", "-9", "-n", "-f", path, path + ".times"], check=False)
    meta["gpu_frees_file"] = os.path.basename(path) + ".gz"
    meta["gpu_times_file"] = os.path.basename(path) + ".times.gz"  # each call's host time, each free's GPU time (us)


def worker(a):
    t0 = time.time()
    import torch
    meta = {
        "name": a.name, "workload": a.worker, "description": WORKLOADS[a.worker]["desc"],
        "impl": a.impl, "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
        "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "memory_fraction": a.fraction, "memory_cap_bytes": None,
        "recorded": not a.no_record, "status": "started",
    }
    side = os.path.join(a.out, a.name + ".json")

    def write_meta():
        with open(side, "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)

    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    meta["device_name"] = props.name
    meta["total_memory"] = int(props.total_memory)
    try:
        meta["mem_get_info"] = [int(x) for x in torch.cuda.mem_get_info(0)]
    except Exception as e:  # noqa: BLE001
        meta["mem_get_info"] = str(e)
    if a.fraction is not None:
        torch.cuda.set_per_process_memory_fraction(float(a.fraction), 0)
        meta["memory_cap_bytes"] = int(float(a.fraction) * props.total_memory)
        CAP_BYTES[0] = meta["memory_cap_bytes"]
    spec = WORKLOADS[a.worker]
    keep = None
    if spec.get("pre") is not None:
        keep = spec["pre"](torch)
        meta["allocations_before_recording"] = len(keep)
    meta["stats_at_record_start"] = _pick_stats(_allocator_stats(torch, meta))
    meta["recording_started_after_allocations"] = bool(keep)
    if not a.no_record:
        meta.update(start_recording(torch))
    gfrees = _start_gpu_frees(meta)
    write_meta()
    rc = 0
    t1 = time.time()
    try:
        extra = spec["fn"](torch, a.impl)
        meta["workload_info"] = extra
        meta["status"] = "ok"
    except torch.OutOfMemoryError as e:
        meta["status"] = "oom"
        meta["error"] = str(e)[:2000]
        rc = 3
    except Exception as e:  # noqa: BLE001
        meta["status"] = "error"
        meta["error"] = traceback.format_exc()[-4000:]
        print(meta["error"], file=sys.stderr)
        rc = 4
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        meta["sync_error"] = str(e)
    meta["workload_seconds"] = round(time.time() - t1, 3)
    _stop_gpu_frees(gfrees, os.path.join(a.out, a.name + ".gpufrees"), meta)
    stats = _allocator_stats(torch, meta)
    meta["stats"] = _pick_stats(stats)
    meta["max_memory_reserved"] = _allocator_peak(torch, torch.cuda.max_memory_reserved)
    meta["max_memory_allocated"] = _allocator_peak(torch, torch.cuda.max_memory_allocated)
    if not a.no_record:
        path = os.path.join(a.out, a.name + ".pickle")
        try:
            torch.cuda.memory._dump_snapshot(path)
            meta["snapshot_file"] = a.name + ".pickle"
        except Exception as e:  # noqa: BLE001
            meta["dump_error"] = traceback.format_exc()[-2000:]
            rc = rc or 5
        try:
            torch.cuda.memory._record_memory_history(enabled=None)
        except Exception:  # noqa: BLE001
            pass
    meta["worker_seconds"] = round(time.time() - t0, 3)
    write_meta()
    del keep
    print(f"[worker {a.name}] status={meta['status']} retries={meta['stats'].get('num_alloc_retries')} "
          f"ooms={meta['stats'].get('num_ooms')} peak_reserved={meta['stats'].get('reserved_bytes.all.peak')} "
          f"peak_alloc={meta['stats'].get('allocated_bytes.all.peak')} t={meta['worker_seconds']}s")
    return rc


# ----------------------------------------------------------------------------
# Driver side (no torch import).
# ----------------------------------------------------------------------------

LOG_LOCK = threading.Lock()
LOG_FH = None


def log(msg):
    line = time.strftime("%H:%M:%S ") + msg
    with LOG_LOCK:
        print(line, flush=True)
        if LOG_FH:
            LOG_FH.write(line + "\n")
            LOG_FH.flush()


def run_worker(out, name, workload, conf, impl="hf", fraction=None, record=True, timeout=240):
    env = dict(os.environ)
    env.pop("PYTORCH_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    else:
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, HERE, "--worker", workload, "--name", name, "--out", out, "--impl", impl]
    if fraction is not None:
        cmd += ["--fraction", repr(float(fraction))]
    if not record:
        cmd.append("--no-record")
    if DEADLINE[0] is not None:
        left = DEADLINE[0] - time.time()
        if left <= 0:
            log(f"skip {name}: past the deadline")
            return 125, None
        timeout = int(min(timeout, left + 120))
    log(f"start {name}: workload={workload} impl={impl} conf={conf!r} fraction={fraction} record={record}")
    t0 = time.time()
    with open(os.path.join(out, name + ".log"), "w") as lf:
        try:
            p = subprocess.run(cmd, env=env, stdout=lf, stderr=subprocess.STDOUT, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = 124
    dt = time.time() - t0
    meta = None
    try:
        with open(os.path.join(out, name + ".json")) as f:
            meta = json.load(f)
    except Exception:  # noqa: BLE001
        pass
    log(f"end {name}: rc={rc} {dt:.1f}s status={meta and meta.get('status')}")
    if rc != 0:
        try:
            with open(os.path.join(out, name + ".log")) as f:
                tail = f.read()[-3000:]
            log(f"--- tail of {name}.log ---\n{tail}\n--- end ---")
        except Exception:  # noqa: BLE001
            pass
    return rc, meta


def finish_trace(out, name, extra=None):
    """Load the pickle with plain pickle, count actions, gzip -9, update sidecar."""
    pk = os.path.join(out, name + ".pickle")
    side = os.path.join(out, name + ".json")
    with open(side) as f:
        meta = json.load(f)
    if extra:
        meta.update(extra)
    if meta.get("name") != name:
        meta["attempt_name"] = meta.get("name")
        meta["name"] = name
    if os.path.exists(pk):
        meta["pickle_bytes"] = os.path.getsize(pk)
        try:
            with open(pk, "rb") as f:
                snap = pickle.load(f)
            traces = snap.get("device_traces", [])
            tr = traces[0] if traces else []
            counts = {}
            for e in tr:
                counts[e.get("action")] = counts.get(e.get("action"), 0) + 1
            meta["trace_entries"] = len(tr)
            meta["trace_action_counts"] = dict(sorted(counts.items()))
            meta["trace_hit_max_entries"] = len(tr) >= MAX_ENTRIES
            segs = snap.get("segments", [])
            meta["snapshot_segments_at_dump"] = len(segs)
            meta["snapshot_reserved_at_dump"] = sum(int(s.get("total_size", 0)) for s in segs)
            meta["snapshot_keys"] = sorted(snap.keys())
            if tr:
                meta["trace_entry_keys"] = sorted(tr[0].keys())
            streams = sorted({e.get("stream") for e in tr})
            meta["trace_streams"] = streams[:16]
            nframes = sum(len(e.get("frames") or []) for e in tr)
            meta["trace_total_frames"] = nframes
            meta["plain_pickle_load"] = "ok"
            del snap
        except Exception as e:  # noqa: BLE001
            meta["plain_pickle_load"] = f"failed: {type(e).__name__}: {e}"
        subprocess.run(["gzip", "-9", "-n", "-f", pk], check=False)
        if os.path.exists(pk + ".gz"):
            meta["pickle_gz_bytes"] = os.path.getsize(pk + ".gz")
            meta["snapshot_file"] = name + ".pickle.gz"
    with open(side, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    st = meta.get("stats", {})
    log(f"SUMMARY {name}: status={meta.get('status')} impl={meta.get('impl')} "
        f"conf={meta.get('pytorch_cuda_alloc_conf')!r} cap={meta.get('memory_cap_bytes')} "
        f"entries={meta.get('trace_entries')} actions={json.dumps(meta.get('trace_action_counts'))} "
        f"peak_reserved={st.get('reserved_bytes.all.peak')} peak_alloc={st.get('allocated_bytes.all.peak')} "
        f"retries={st.get('num_alloc_retries')} ooms={st.get('num_ooms')} "
        f"seg_alloc={st.get('segment.all.allocated')} seg_freed={st.get('segment.all.freed')} "
        f"gz={meta.get('pickle_gz_bytes')} load={meta.get('plain_pickle_load')}")
    return meta


def job_simple(out, name, workload, conf, common, fraction=None):
    spec = WORKLOADS[workload]
    rc, meta = run_worker(out, name, workload, conf, fraction=fraction)
    if rc != 0 and spec.get("fallback"):
        log(f"{name}: hf impl failed (rc={rc}); retrying with plain-torch fallback")
        for suf in (".json", ".log"):
            p = os.path.join(out, name + suf)
            if os.path.exists(p):
                os.replace(p, os.path.join(out, name + ".hf_failed" + suf))
        if os.path.exists(os.path.join(out, name + ".pickle")):
            os.remove(os.path.join(out, name + ".pickle"))
        rc, meta = run_worker(out, name, workload, conf, impl="torch")
    if meta is not None:
        finish_trace(out, name, dict(common, worker_rc=rc))
    return name, rc


def job_peak(out, name, workload, conf, common):
    """A run without recording (its sidecar holds the allocator's peaks): what cudaMallocAsync allows."""
    rc, meta = run_worker(out, name, workload, conf, record=False)
    if meta is not None:
        meta.update(common, worker_rc=rc)
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
    return name, rc


# issue 12's captures (--knobs): knobs the model must reproduce, and cudaMallocAsync's real peaks
# (several runs each: they vary between identical runs).  A fraction of the H200's 150 GB: 0.003
# is a 450 MB cap, under which varlen_infer's expandable peak (369 MB) meets a 0.6 GC threshold.
CAP_FRACTION = 0.0143  # about 2 GiB of the H200's 150 GB: exp_cap's cap
KNOB_JOBS = [
    ("rp2_list_decode", "llm_decode", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", None),
    ("rp2_list_infer", "varlen_infer", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", None),
    ("exp_rp2", "varlen_infer", "expandable_segments:True,roundup_power2_divisions:4", None),
    ("exp_split", "varlen_infer", "expandable_segments:True,max_split_size_mb:64", None),
    ("exp_gc_cap", "varlen_infer", "expandable_segments:True,garbage_collection_threshold:0.6", 0.003),
    ("graph_pool", "graph_pool", "", None),
] + [
    # Workloads whose results depend on the knob, each beside the same workload without it (or
    # with the closest single value), so that a capture shows what the knob changes.
    ("rp2_list_sizes", "rp2_sizes", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", None),
    ("rp2_8_sizes", "rp2_sizes", "roundup_power2_divisions:8", None),
    ("rp2_none_sizes", "rp2_sizes", "", None),
    ("rp2_list_kv", "kv_grow", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", None),
    ("rp2_8_kv", "kv_grow", "roundup_power2_divisions:8", None),
    ("exp_mix", "exp_mix", "expandable_segments:True", None),
    ("exp_rp2_mix", "exp_mix", "expandable_segments:True,roundup_power2_divisions:4", None),
    ("exp_rp2_list_mix", "exp_mix", "expandable_segments:True,roundup_power2_divisions:[32:1,64:2,128:4,>:8]", None),
    ("exp_split_mix", "exp_mix", "expandable_segments:True,max_split_size_mb:64", None),
    ("exp_cap_mix", "exp_cap", "expandable_segments:True", CAP_FRACTION),
    ("exp_gc_cap_mix", "exp_cap", "expandable_segments:True,garbage_collection_threshold:0.6", CAP_FRACTION),
    ("exp_gc_split_cap_mix", "exp_cap",
     "expandable_segments:True,garbage_collection_threshold:0.6,max_split_size_mb:64", CAP_FRACTION),
]
PEAK_JOBS = [("async_%s_%d" % (w, i), w, "backend:cudaMallocAsync")
             for w in os.environ.get("PEAK_WORKLOADS", "llm_decode,varlen_infer,transformer_train,cnn_train").split(",")
             for i in range(1, int(os.environ.get("PEAK_RUNS", "3")) + 1)]  # runs of each (they vary)

GC_CONF = "garbage_collection_threshold:0.6,max_split_size_mb:64"
DEADLINE = [None]  # absolute time after which no new worker starts


def _rename(out, src, dst):
    for suf in (".pickle", ".json", ".log"):
        if os.path.exists(os.path.join(out, src + suf)):
            os.replace(os.path.join(out, src + suf), os.path.join(out, dst + suf))


def _probe(out, workload, conf, name):
    rc, probe = run_worker(out, name, workload, conf, record=False)
    impl = "hf"
    if rc != 0 and WORKLOADS[workload].get("fallback"):
        rc, probe = run_worker(out, name, workload, conf, impl="torch", record=False)
        impl = "torch"
    if rc != 0 or not probe:
        return None, impl
    return probe, impl


def cap_ladder(out, common, final, conf, probe, impl, workload):
    """Run WORKLOAD under CONF with several caps between peak allocated and peak
    reserved (from PROBE, an uncapped earlier run), all at once, each in its own
    subprocess.  Keeps as FINAL the completed attempt with the largest cap among
    those with num_alloc_retries > 0 (else the tightest completed one), and the
    OOM attempt with the largest cap as FINAL_oom."""
    st = probe["stats"]
    A = st["allocated_bytes.all.peak"]
    R = st["reserved_bytes.all.peak"]
    total = probe["total_memory"]
    cands = sorted({int(c) for c in (1.1 * A, 1.2 * A, 1.35 * A, 1.5 * A, 1.75 * A, 2.0 * A,
                                     0.7 * R, 0.8 * R)
                    if A * 1.02 < c < R})
    if not cands:
        cands = [int(A + 0.5 * (R - A)), int(R)]
    log(f"{final}: probe {probe['name']} conf={probe.get('pytorch_cuda_alloc_conf')!r} "
        f"peak_alloc={A} peak_reserved={R} total={total}; caps to try {cands}")

    def attempt(i):
        name = f"{final}_try{i}"
        rc, meta = run_worker(out, name, workload, conf, impl=impl, fraction=cands[i] / total)
        return i, name, rc, meta

    with ThreadPoolExecutor(max_workers=len(cands)) as ex:
        results = list(ex.map(attempt, range(len(cands))))
    done = [r for r in results if r[3] and r[3].get("status") == "ok" and r[2] == 0]
    ooms = [r for r in results if r[3] and r[3].get("status") == "oom"]
    for i, name, rc, meta in results:
        log(f"{final}: attempt {i} cap={cands[i]} rc={rc} status={meta and meta.get('status')} "
            f"retries={meta and meta.get('stats', {}).get('num_alloc_retries')}")
    with_retries = [r for r in done if r[3]["stats"].get("num_alloc_retries", 0) > 0]
    keep = max(with_retries, key=lambda r: r[0]) if with_retries else (done[0] if done else None)
    last_rc = 1
    for label, r in ((final, keep), (final + "_oom", max(ooms, key=lambda r: r[0]) if ooms else None)):
        if r is None:
            continue
        i, name, rc, meta = r
        _rename(out, name, label)
        finish_trace(out, label, dict(common, worker_rc=rc, cap_probe_stats=st,
                                      cap_probe_conf=probe.get("pytorch_cuda_alloc_conf"),
                                      cap_candidates=cands, cap_attempt=i))
        if label == final:
            last_rc = 0
    if keep is None:
        log(f"{final}: every cap failed")
    return final, last_rc


def job_caps(out, common, workload="varlen_infer", which=("gc_cap", "cap_retry")):
    res = []
    if "gc_cap" in which:
        probe, impl = _probe(out, workload, GC_CONF, "gc_probe")
        if probe is None:
            log("gc_cap: probe failed; skipping")
            res.append(("gc_cap", 1))
        else:
            res.append(cap_ladder(out, common, "gc_cap", GC_CONF, probe, impl, workload))
    if "cap_retry" not in which:
        return res
    # Extra: default conf + cap only. With max_split_size unset the allocator goes
    # straight to 'free all cached blocks and retry', so retries are certain.
    probe2, impl2 = _probe(out, workload, "", "cap_probe")
    if probe2 is None:
        log("cap_retry: probe failed; skipping")
        res.append(("cap_retry", 1))
    else:
        res.append(cap_ladder(out, common, "cap_retry", "", probe2, impl2, workload))
    return res


def driver(a):
    global LOG_FH
    os.makedirs(a.out, exist_ok=True)
    LOG_FH = open(os.path.join(a.out, "capture.log"), "a")
    t0 = time.time()
    DEADLINE[0] = t0 + a.deadline
    common = {"capture_host": os.uname().nodename, "python": sys.version.split()[0],
              "capture_command": "bash traces/capture/run_on_device.sh"}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        common["nvidia_smi"] = q.stdout.strip()
        common["driver_version"] = q.stdout.strip().split(",")[1].strip()
    except Exception as e:  # noqa: BLE001
        common["nvidia_smi"] = f"unavailable: {e}"
    log(f"driver start: {common}")
    simple = [
        ("randn_loop", "randn_loop", ""),
        ("cnn_train", "cnn_train", ""),
        ("transformer_train", "transformer_train", ""),
        ("varlen_infer", "varlen_infer", ""),
        ("llm_decode", "llm_decode", ""),
        ("weights_load", "weights_load", ""),
        ("two_streams", "two_streams", ""),
        ("rp2", "varlen_infer", "roundup_power2_divisions:4"),
        ("expandable", "varlen_infer", "expandable_segments:True"),
    ]
    only = set(a.only.split(",")) if a.only else None
    results = {}
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = []
        if a.knobs:  # issue 12's set only
            for name, wl, conf, fraction in KNOB_JOBS:
                if not only or name in only:
                    futs.append(ex.submit(job_simple, a.out, name, wl, conf, common, fraction))
            for name, wl, conf in PEAK_JOBS:
                if not only or name in only:
                    futs.append(ex.submit(job_peak, a.out, name, wl, conf, common))
            simple = []
        which = tuple(n for n in ("gc_cap", "cap_retry") if (not only or n in only) and not a.knobs)
        if which:
            futs.append(ex.submit(job_caps, a.out, common, "varlen_infer", which))
        for name, wl, conf in simple:
            if only and name not in only:
                continue
            futs.append(ex.submit(job_simple, a.out, name, wl, conf, common))
        for f in futs:
            try:
                r = f.result()
                for name, rc in (r if isinstance(r, list) else [r]):
                    results[name] = rc
            except Exception:  # noqa: BLE001
                log("job crashed: " + traceback.format_exc())
    for fn in sorted(os.listdir(a.out)):
        if fn.endswith(".pickle"):  # un-finished attempts: not shipped
            log(f"removing unfinished snapshot {fn}")
            os.remove(os.path.join(a.out, fn))
    log(f"driver done in {time.time() - t0:.1f}s: {json.dumps(results)}")
    return 0 if all(rc == 0 for rc in results.values()) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--worker")
    ap.add_argument("--name")
    ap.add_argument("--impl", default="hf", choices=["hf", "torch"])
    ap.add_argument("--fraction", type=float)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--knobs", action="store_true",
                    help="issue 12's captures instead of the bundled set: knobs (list-form roundup, "
                         "expandable with its knobs, a CUDA graph pool) and cudaMallocAsync's peaks, 3 runs each")
    ap.add_argument("--plan", choices=sorted(PLANS),
                    help="write that knob workload's plan to --out as a native trace (no torch, no GPU)")
    ap.add_argument("--total-memory", type=int,
                    help="with --plan and --fraction: the GPU's total memory (default the H200's 150109880320)")
    ap.add_argument("--jobs", type=int, default=5)
    ap.add_argument("--deadline", type=float, default=380.0,
                    help="seconds after which the driver starts no new worker")
    a = ap.parse_args()
    if a.plan:  # no GPU: the plan as a native trace, for the model
        if a.fraction is not None:
            CAP_BYTES[0] = int(a.fraction * (a.total_memory or 150109880320))
        write_plan_trace(a.plan, a.out)
        return
    if a.worker:
        a.name = a.name or a.worker
        sys.exit(worker(a))
    sys.exit(driver(a))


if __name__ == "__main__":
    main()
