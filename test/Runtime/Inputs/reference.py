#!/usr/bin/env python3
"""An independent eager PyTorch reference of the decoder families parc
imports, checked against what parc-run computed.

    reference.py CONFIG.json STEP.safetensors [--loss-rtol X] [--grad-rtol X]

STEP is what `parc-run --dump` writes for step 1 of a world-1 plan: the
batch (input_ids, labels), every parameter under its Hugging Face name
before the update, its gradient before clipping (grad.<name>) and the
loss. This script builds the model's forward and loss from the config as
the architecture is documented (written here, not taken from parc or
transformers), loads those parameters, and recomputes the loss and every
gradient in fp32. It prints the largest relative differences and exits 1
if the loss differs by more than --loss-rtol or any parameter's gradient
by more than --grad-rtol (of that gradient's norm).

Families: llama, mistral, qwen2 (q/k/v biases), qwen3 (per-head q/k RMS
norms), gemma3_text and gemma4_text (Gemma3Text, Gemma4Text below).
"""

import argparse
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": torch.float32, "I64": torch.int64}[info["dtype"]]
        raw = bytearray(data[base + begin:base + end])
        tensors[name] = torch.frombuffer(raw, dtype=dtype).reshape(info["shape"])
    return tensors


def parameter_names(dump):
    """The parameters of a `parc-run --dump` file (not its gradients, batch
    or loss)."""
    return [n for n in dump
            if n not in ("input_ids", "labels", "loss") and not n.startswith("grad.")]


def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


def rotate(x, theta, factor=1.0, pairs=None):
    """Rotary embedding in the half-split layout: dimension i pairs with
    i + head_dim / 2, frequency theta^(-2i / head_dim), positions divided
    by `factor` (linear RoPE scaling); with `pairs`, only the first `pairs`
    frequencies turn (a proportional RoPE: the exponents keep the whole
    head_dim, the other frequencies are zero)."""
    seq, dim = x.shape[-2], x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    if pairs is not None:
        inv[pairs:] = 0.0
    positions = torch.arange(seq, dtype=torch.float64) / factor
    angles = torch.outer(positions, inv)
    cos = torch.cat([angles.cos(), angles.cos()], -1).to(x.dtype)
    sin = torch.cat([angles.sin(), angles.sin()], -1).to(x.dtype)
    first, second = x[..., : dim // 2], x[..., dim // 2:]
    return x * cos + torch.cat([-second, first], -1) * sin


def attend(q, k, v, scale, window=None):
    """Causal attention of [batch, heads, seq, head_dim] queries over fewer
    KV heads (each serving heads / kv_heads queries), logits times `scale`,
    each position seeing the last `window` positions (itself included) when
    a window is given; returns [batch, seq, heads * head_dim]."""
    batch, heads, seq, hd = q.shape
    group = heads // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)) * scale
    i = torch.arange(seq).view(-1, 1)
    j = torch.arange(seq).view(1, -1)
    allowed = j <= i
    if window:
        allowed = allowed & (i - j < window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = scores.softmax(-1) @ v
    return out.transpose(1, 2).reshape(batch, seq, heads * hd)


def cross_entropy(logits, labels, softcap=None):
    """The mean token loss over fp32 logits, after an optional tanh softcap."""
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))


class Decoder:
    def __init__(self, config, params):
        self.c = config
        self.p = params
        self.family = config["model_type"]
        self.hidden = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads", self.heads)
        self.head_dim = config.get("head_dim") or self.hidden // self.heads
        self.eps = config.get("rms_norm_eps", 1e-6)
        self.theta = config.get("rope_theta", 10000.0)
        self.layers = config["num_hidden_layers"]
        self.window = config.get("sliding_window") if self.family == "mistral" else None
        self.tied = config.get("tie_word_embeddings", False)

    def linear(self, x, name):
        y = x @ self.p[name + ".weight"].t()
        bias = self.p.get(name + ".bias")
        return y + bias if bias is not None else y

    def attention(self, x, prefix):
        batch, seq, _ = x.shape
        q = self.linear(x, prefix + ".q_proj").view(batch, seq, self.heads, self.head_dim)
        k = self.linear(x, prefix + ".k_proj").view(batch, seq, self.kv_heads, self.head_dim)
        v = self.linear(x, prefix + ".v_proj").view(batch, seq, self.kv_heads, self.head_dim)
        if self.family == "qwen3":
            q = rms_norm(q, self.p[prefix + ".q_norm.weight"], self.eps)
            k = rms_norm(k, self.p[prefix + ".k_norm.weight"], self.eps)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        q, k = rotate(q, self.theta), rotate(k, self.theta)
        out = attend(q, k, v, 1.0 / math.sqrt(self.head_dim), self.window)
        return self.linear(out, prefix + ".o_proj")

    def mlp(self, x, prefix):
        gate = F.silu(self.linear(x, prefix + ".gate_proj"))
        return self.linear(gate * self.linear(x, prefix + ".up_proj"), prefix + ".down_proj")

    def loss(self, ids, labels):
        h = self.p["model.embed_tokens.weight"][ids]
        for n in range(self.layers):
            prefix = "model.layers.%d" % n
            a = rms_norm(h, self.p[prefix + ".input_layernorm.weight"], self.eps)
            h = h + self.attention(a, prefix + ".self_attn")
            m = rms_norm(h, self.p[prefix + ".post_attention_layernorm.weight"], self.eps)
            h = h + self.mlp(m, prefix + ".mlp")
        h = rms_norm(h, self.p["model.norm.weight"], self.eps)
        head = self.p["model.embed_tokens.weight" if self.tied else "lm_head.weight"]
        return cross_entropy(h @ head.t(), labels)


class Gemma(Decoder):
    """What Gemma 3 and Gemma 4 share: embeddings scaled by sqrt(hidden),
    sandwich norms around attention and MLP (self.norm), a GELU (tanh) MLP,
    tied embeddings and the optional final logit softcap; attention takes
    whether the layer is a full-attention one."""

    def mlp(self, x, prefix):
        gate = F.gelu(self.linear(x, prefix + ".gate_proj"), approximate="tanh")
        return self.linear(gate * self.linear(x, prefix + ".up_proj"), prefix + ".down_proj")

    def loss(self, ids, labels):
        embed = self.p["model.embed_tokens.weight"]
        h = embed[ids] * math.sqrt(self.hidden)
        for n in range(self.layers):
            prefix = "model.layers.%d." % n
            a = self.attention(self.norm(h, prefix + "input_layernorm"), prefix + "self_attn",
                               self.types[n] == "full_attention")
            h = h + self.norm(a, prefix + "post_attention_layernorm")
            m = self.mlp(self.norm(h, prefix + "pre_feedforward_layernorm"), prefix + "mlp")
            h = h + self.norm(m, prefix + "post_feedforward_layernorm")
        h = self.norm(h, "model.norm")
        return cross_entropy(h @ embed.t(), labels, self.softcap)


class Gemma4Text(Gemma):
    """Gemma 4's text decoder: embeddings scaled by sqrt(hidden); sandwich
    norms (x * w, weights from 1); per-head q/k norms and a weightless v
    norm; logits of attention unscaled; sliding layers with their window
    and local RoPE, full layers with their own head_dim and KV heads, K = V
    (the value is the un-normed key projection) and a proportional RoPE;
    GELU (tanh) MLP; tied embeddings; a final logit softcap."""

    def norm(self, x, name):
        return rms_norm(x, self.p[name + ".weight"], self.eps)

    def __init__(self, config, params):
        super().__init__(config, params)
        c = config
        self.window = c.get("sliding_window", 512)
        self.types = c["layer_types"]
        self.global_head_dim = c.get("global_head_dim", 512)
        self.global_kv_heads = c.get("num_global_key_value_heads", self.kv_heads)
        self.k_eq_v = c.get("attention_k_eq_v", False)
        self.softcap = c.get("final_logit_softcapping")
        rope = c.get("rope_parameters") or {}
        local = rope.get("sliding_attention", {})
        full = rope.get("full_attention", {})
        self.local_theta = local.get("rope_theta", c.get("rope_local_base_freq", 10000.0))
        self.full_theta = full.get("rope_theta", c.get("rope_theta", 1000000.0))
        self.full_partial = full.get("partial_rotary_factor", 0.25)

    def attention(self, x, prefix, full):
        batch, seq, _ = x.shape
        heads = self.heads
        kv_heads = self.global_kv_heads if full else self.kv_heads
        hd = self.global_head_dim if full else self.head_dim
        q = self.linear(x, prefix + ".q_proj").view(batch, seq, heads, hd)
        k_raw = self.linear(x, prefix + ".k_proj").view(batch, seq, kv_heads, hd)
        v_raw = k_raw if full and self.k_eq_v else \
            self.linear(x, prefix + ".v_proj").view(batch, seq, kv_heads, hd)
        q = rms_norm(q, self.p[prefix + ".q_norm.weight"], self.eps)
        k = rms_norm(k_raw, self.p[prefix + ".k_norm.weight"], self.eps)
        v = rms_norm(v_raw, 1.0, self.eps)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if full:
            pairs = int(self.full_partial * hd / 2)
            q, k = rotate(q, self.full_theta, pairs=pairs), rotate(k, self.full_theta, pairs=pairs)
        else:
            q, k = rotate(q, self.local_theta), rotate(k, self.local_theta)
        out = attend(q, k, v, 1.0, None if full else self.window)
        return self.linear(out, prefix + ".o_proj")


class Gemma3Text(Gemma):
    """Gemma 3's text decoder: embeddings scaled by sqrt(hidden); sandwich
    norms and per-head q/k norms of x * (1 + w); attention logits scaled by
    query_pre_attn_scalar^-1/2; sliding layers (layer_types, or every
    sliding_window_pattern-th layer full) with their window and the local
    RoPE base, full layers with rope_theta (positions divided by a linear
    rope_scaling factor); GELU (tanh) MLP; tied embeddings; the optional
    final logit softcap."""

    def __init__(self, config, params):
        super().__init__(config, params)
        c = config
        self.window = c.get("sliding_window", 4096)
        pattern = c.get("sliding_window_pattern", 6)
        self.types = c.get("layer_types") or [
            "full_attention" if (n + 1) % pattern == 0 else "sliding_attention"
            for n in range(self.layers)]
        self.scale = c.get("query_pre_attn_scalar", 256) ** -0.5
        self.local_theta = c.get("rope_local_base_freq", 10000.0)
        self.full_theta = c.get("rope_theta", 1000000.0)
        scaling = c.get("rope_scaling") or {}
        self.full_factor = scaling.get("factor", 1.0) if scaling.get("rope_type", "linear") == "linear" else 1.0
        self.softcap = c.get("final_logit_softcapping")

    def norm(self, x, name):
        return rms_norm(x, 1.0 + self.p[name + ".weight"], self.eps)

    def attention(self, x, prefix, full):
        batch, seq, _ = x.shape
        q = self.linear(x, prefix + ".q_proj").view(batch, seq, self.heads, self.head_dim)
        k = self.linear(x, prefix + ".k_proj").view(batch, seq, self.kv_heads, self.head_dim)
        v = self.linear(x, prefix + ".v_proj").view(batch, seq, self.kv_heads, self.head_dim)
        q = self.norm(q, prefix + ".q_norm")
        k = self.norm(k, prefix + ".k_norm")
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        theta = self.full_theta if full else self.local_theta
        factor = self.full_factor if full else 1.0
        q, k = rotate(q, theta, factor), rotate(k, theta, factor)
        out = attend(q, k, v, self.scale, None if full else self.window)
        return self.linear(out, prefix + ".o_proj")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("step")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    args = ap.parse_args()
    config = json.load(open(args.config))
    families = {"llama": Decoder, "mistral": Decoder, "qwen2": Decoder,
                "qwen3": Decoder, "gemma3_text": Gemma3Text,
                "gemma4_text": Gemma4Text}
    if config["model_type"] not in families:
        sys.exit("reference.py: no reference for model_type '%s'" % config["model_type"])
    dump = read_safetensors(args.step)
    names = parameter_names(dump)
    params = {n: dump[n].clone().requires_grad_(True) for n in names}
    model = families[config["model_type"]](config, params)
    # parc-run averages the per-micro-batch mean losses: with equal
    # micro-batches that is the mean over the step's tokens.
    loss = model.loss(dump["input_ids"], dump["labels"])
    loss.backward()

    failed = False
    parc_loss = float(dump["loss"])
    loss_delta = abs(loss.item() - parc_loss) / abs(loss.item())
    print("loss: reference %.8f, parc-run %.8f, rel delta %.2e" % (loss.item(), parc_loss, loss_delta))
    if loss_delta > args.loss_rtol:
        print("FAIL: loss differs by more than %g" % args.loss_rtol)
        failed = True
    worst, worst_name = 0.0, None
    checked = 0
    for name in names:
        mine = params[name].grad
        theirs = dump.get("grad." + name)
        if mine is None or theirs is None:
            print("FAIL: %s has %s gradient" % (name, "no reference" if mine is None else "no parc-run"))
            failed = True
            continue
        delta = ((mine - theirs).norm() / mine.norm().clamp_min(1e-30)).item()
        checked += 1
        if delta > worst:
            worst, worst_name = delta, name
        if delta > args.grad_rtol:
            print("FAIL: %s gradient differs by %.2e" % (name, delta))
            failed = True
    print("gradients: %d parameters, largest rel delta %.2e (%s)" % (checked, worst, worst_name))
    print("FAIL" if failed else "PASS")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
