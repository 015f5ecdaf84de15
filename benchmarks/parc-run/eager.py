#!/usr/bin/env python3
"""The Llama of a config.json in PyTorch eager, trained like parc-run trains it.

usage: eager.py CONFIG --seq S --mbs B --steps N [--ddp WORLD]

Same ops (embedding, RMSNorm in fp32, rotate-half rope, eager GQA attention,
SiLU-gated MLP, cross-entropy), fp32, AdamW(betas 0.9/0.95, eps 1e-8, weight
decay 0.01), gradient clipping to 1.0, seeded random tokens. Prints the median
step time of steps 2..N in seconds. With --ddp WORLD it runs WORLD processes
on Gloo under DistributedDataParallel, each with micro-batch B.
"""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
                * self.weight).to(x.dtype)


def rope(x, head_dim, theta):
    b, s, _ = x.shape
    h = x.view(b, s, -1, head_dim)
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    f = torch.outer(torch.arange(s, dtype=torch.float64), inv).float()
    emb = torch.cat([f, f], -1).view(1, s, 1, head_dim)
    half = head_dim // 2
    rot = torch.cat([-h[..., half:], h[..., :half]], -1)
    return (h * emb.cos() + rot * emb.sin()).view(x.shape)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d, hd = c["hidden_size"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        self.h, self.kv, self.hd = c["num_attention_heads"], c["num_key_value_heads"], hd
        self.theta = c.get("rope_theta", 10000.0)
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.q, self.k, self.v = lin(d, self.h * hd), lin(d, self.kv * hd), lin(d, self.kv * hd)
        self.o = lin(self.h * hd, d)
        inner = c["intermediate_size"]
        self.gate, self.up, self.down = lin(d, inner), lin(d, inner), lin(inner, d)
        self.n1 = RMSNorm(d, c["rms_norm_eps"])
        self.n2 = RMSNorm(d, c["rms_norm_eps"])

    def forward(self, x):
        b, s, _ = x.shape
        n = self.n1(x)
        q = rope(self.q(n), self.hd, self.theta).view(b, s, self.h, self.hd).transpose(1, 2)
        k = rope(self.k(n), self.hd, self.theta).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(n).view(b, s, self.kv, self.hd).transpose(1, 2)
        rep = self.h // self.kv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        p = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
        a = (p @ v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.o(a)
        n = self.n2(x)
        return x + self.down(F.silu(self.gate(n)) * self.up(n))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.head = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, ids, labels):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), labels.reshape(-1))


def train(rank, world, args, result):
    torch.manual_seed(0)
    config = json.load(open(args.config))
    model = Llama(config)
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95),
                            eps=1e-8, weight_decay=0.01)
    gen = torch.Generator().manual_seed(rank)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        tokens = torch.randint(config["vocab_size"], (args.mbs, args.seq + 1), generator=gen)
        loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    if rank == 0:
        result.put(statistics.median(times[1:]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--mbs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ddp", type=int, default=1)
    args = parser.parse_args()
    import torch.multiprocessing as mp
    queue = mp.get_context("spawn").SimpleQueue()
    if args.ddp == 1:
        train(0, 1, args, queue)
    else:
        os.environ["MASTER_PORT"] = str(29000 + os.getpid() % 1000)
        mp.spawn(train, args=(args.ddp, args, queue), nprocs=args.ddp)
    print(f"{queue.get():.6f}")


if __name__ == "__main__":
    main()
