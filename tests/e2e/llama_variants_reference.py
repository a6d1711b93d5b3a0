#!/usr/bin/env python3
"""The Llama features stories260K does not use, against an independent float64 forward pass in
Hugging Face LlamaForCausalLM conventions written here in plain Python (no numpy needed).

The reference is first checked against tests/data/stories260K/reference.json (it must reproduce the
first greedy tokens). Then variants of stories260K's real weights are written to WORKDIR, each
switching on features the plugin must honour:
  biased:  attention_bias (q/k/v/o biases) + mlp_bias, a separate lm_head, llama3 rope_scaling
  linear:  linear rope_scaling, BF16 weights
  half:    attention_bias only, F16 weights, rms_norm_eps and rope_theta changed
llaisys-offline generate runs each greedily with --top-logits 512 (the whole vocabulary); every
step's logits must match the reference (teacher-forced on the generated tokens) within TOL, and every
greedy choice must be the reference's argmax unless the top two are closer than TOL.

usage: llama_variants_reference.py OFFLINE STORIES_DIR REFERENCE_JSON WORKDIR
"""
import json
import math
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

TOL = 1e-4       # f32 kernels vs float64 here (observed <= 1.3e-5), logits of magnitude ~10
STEPS = 8        # generated tokens per variant


# ---- safetensors ----------------------------------------------------------------------------------

def read_safetensors(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        begin, end = info["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        values = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        tensors[name] = (info["shape"], values)
    return tensors


def bf16_round(x):
    """x rounded to bfloat16 (nearest even), as a float."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def encode(values, dtype):
    """(bytes, the values as stored) for F32, BF16 or F16."""
    if dtype == "F32":
        raw = struct.pack(f"<{len(values)}f", *values)
        return raw, list(struct.unpack(f"<{len(values)}f", raw))
    if dtype == "F16":
        raw = struct.pack(f"<{len(values)}e", *values)
        return raw, list(struct.unpack(f"<{len(values)}e", raw))
    stored = [bf16_round(v) for v in values]
    raw = b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in stored)
    return raw, stored


def write_safetensors(path, tensors, dtype):
    """Writes tensors {name: (shape, values)} in `dtype`; returns them as stored (rounded)."""
    header, chunks, stored, offset = {}, [], {}, 0
    for name, (shape, values) in sorted(tensors.items()):
        raw, rounded = encode(values, dtype)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        stored[name] = (shape, rounded)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    return stored


# ---- the reference forward pass --------------------------------------------------------------------

def matvec(w, rows, cols, x):
    return [sum(w[r * cols + c] * x[c] for c in range(cols)) for r in range(rows)]


def rms_norm(x, weight, eps):
    scale = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * scale * g for v, g in zip(x, weight)]


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def inv_frequencies(cfg):
    d = head_dim(cfg)
    inv = [cfg["rope_theta"] ** (-2.0 * i / d) for i in range(d // 2)]
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        inv = [f / scaling["factor"] for f in inv]
    elif kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for f in inv:
            wavelen = 2 * math.pi / f
            if wavelen < old / high:
                out.append(f)
            elif wavelen > old / low:
                out.append(f / factor)
            else:
                smooth = (old / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        inv = out
    return inv


def rope(vec, heads, d, position, inv):
    out = list(vec)
    half = d // 2
    for h in range(heads):
        base = h * d
        for i in range(half):
            c, s = math.cos(position * inv[i]), math.sin(position * inv[i])
            a, b = vec[base + i], vec[base + i + half]
            out[base + i] = a * c - b * s
            out[base + i + half] = b * c + a * s
    return out


def forward(cfg, t, ids):
    """Logits after every position of `ids` (a causal pass over the whole sequence)."""
    hidden, inter, d = cfg["hidden_size"], cfg["intermediate_size"], head_dim(cfg)
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    eps, vocab = cfg["rms_norm_eps"], cfg["vocab_size"]
    attn_bias, mlp_bias = cfg.get("attention_bias", False), cfg.get("mlp_bias", False)
    inv = inv_frequencies(cfg)
    embed = t["model.embed_tokens.weight"][1]
    head = t["model.embed_tokens.weight"][1] if cfg["tie_word_embeddings"] else t["lm_head.weight"][1]

    def lin(name, rows, cols, x, bias):
        y = matvec(t[name + ".weight"][1], rows, cols, x)
        if bias:
            y = [a + b for a, b in zip(y, t[name + ".bias"][1])]
        return y

    xs = [embed[i * hidden:(i + 1) * hidden] for i in ids]
    caches = [([], []) for _ in range(cfg["num_hidden_layers"])]
    logits = []
    for pos in range(len(ids)):
        x = list(xs[pos])
        for layer in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{layer}."
            h = rms_norm(x, t[p + "input_layernorm.weight"][1], eps)
            q = rope(lin(p + "self_attn.q_proj", heads * d, hidden, h, attn_bias), heads, d, pos, inv)
            k = rope(lin(p + "self_attn.k_proj", kv_heads * d, hidden, h, attn_bias), kv_heads, d, pos, inv)
            v = lin(p + "self_attn.v_proj", kv_heads * d, hidden, h, attn_bias)
            keys, values = caches[layer]
            keys.append(k)
            values.append(v)
            attn = []
            for hh in range(heads):
                g = hh // (heads // kv_heads)
                qh = q[hh * d:(hh + 1) * d]
                scores = [sum(a * b for a, b in zip(qh, kk[g * d:(g + 1) * d])) / math.sqrt(d) for kk in keys]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                attn += [sum(w * vv[g * d + j] for w, vv in zip(weights, values)) / total for j in range(d)]
            x = [a + b for a, b in zip(x, lin(p + "self_attn.o_proj", hidden, heads * d, attn, attn_bias))]
            h = rms_norm(x, t[p + "post_attention_layernorm.weight"][1], eps)
            gate = lin(p + "mlp.gate_proj", inter, hidden, h, mlp_bias)
            up = lin(p + "mlp.up_proj", inter, hidden, h, mlp_bias)
            act = [gg / (1 + math.exp(-gg)) * u for gg, u in zip(gate, up)]
            x = [a + b for a, b in zip(x, lin(p + "mlp.down_proj", hidden, inter, act, mlp_bias))]
        logits.append(matvec(head, vocab, hidden, rms_norm(x, t["model.norm.weight"][1], eps)))
    return logits


def argmax(row):
    return max(range(len(row)), key=lambda i: row[i])


# ---- variants -------------------------------------------------------------------------------------

def make_variant(stories, work, name, config_changes, dtype, rng):
    cfg = json.loads((Path(stories) / "config.json").read_text())
    cfg.update(config_changes)
    tensors = dict(read_safetensors(Path(stories) / "model.safetensors"))
    hidden, inter = cfg["hidden_size"], cfg["intermediate_size"]
    q_dim = cfg["num_attention_heads"] * head_dim(cfg)
    kv_dim = cfg["num_key_value_heads"] * head_dim(cfg)
    noise = lambda n, scale: [rng.gauss(0.0, scale) for _ in range(n)]  # noqa: E731
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        if cfg.get("attention_bias"):
            for proj, size in (("q_proj", q_dim), ("k_proj", kv_dim), ("v_proj", kv_dim), ("o_proj", hidden)):
                tensors[p + f"self_attn.{proj}.bias"] = ([size], noise(size, 0.1))
        if cfg.get("mlp_bias"):
            for proj, size in (("gate_proj", inter), ("up_proj", inter), ("down_proj", hidden)):
                tensors[p + f"mlp.{proj}.bias"] = ([size], noise(size, 0.1))
    if not cfg["tie_word_embeddings"]:
        shape, embed = tensors["model.embed_tokens.weight"]
        tensors["lm_head.weight"] = (shape, [e + n for e, n in zip(embed, noise(len(embed), 0.05))])
    out = Path(work) / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for f in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(stories) / f, out / f)
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    stored = write_safetensors(out / "model.safetensors", tensors, dtype)
    return out, cfg, stored


VARIANTS = [
    ("biased", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": False,
                "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}, "F32"),
    ("linear", {"rope_scaling": {"type": "linear", "factor": 2.0}}, "BF16"),
    ("half", {"attention_bias": True, "rms_norm_eps": 1e-3, "rope_theta": 500.0}, "F16"),
]


def main() -> int:
    offline, stories, reference_path, work = sys.argv[1:5]
    Path(work).mkdir(parents=True, exist_ok=True)
    failures = []

    # The reference forward pass itself, against the stories260K reference.
    reference = json.loads(Path(reference_path).read_text())["cases"][0]
    cfg = json.loads((Path(stories) / "config.json").read_text())
    weights = read_safetensors(Path(stories) / "model.safetensors")
    seq = reference["prompt_ids"] + reference["greedy_ids"][:STEPS - 1]
    rows = forward(cfg, weights, seq)
    mine = [argmax(r) for r in rows[len(reference["prompt_ids"]) - 1:]]
    if mine != reference["greedy_ids"][:STEPS]:
        failures.append(f"the Python reference does not reproduce stories260K: {mine}")

    rng = random.Random(20240901)
    prompt = reference["prompt_ids"] + [383, 286, 261]  # "Once upon a time there was a", roughly
    for name, changes, dtype in VARIANTS:
        model_dir, vcfg, stored = make_variant(stories, work, name, changes, dtype, rng)
        line = json.dumps({"id": name, "prompt_ids": prompt, "max_tokens": STEPS, "ignore_eos": True})
        run = subprocess.run([offline, "--threads", "1", "--model-options", '{"matmul": "f32"}', "generate", "--model", str(model_dir), "--temperature", "0",
                              "--top-logits", str(vcfg["vocab_size"]), "--progress", "off"],
                             input=line + "\n", capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{name}: llaisys-offline failed: {run.stderr.strip()[-500:]}")
            continue
        got = json.loads(run.stdout.splitlines()[0])
        ref_rows = forward(vcfg, stored, prompt + got["output_ids"][:-1])[len(prompt) - 1:]
        worst = 0.0
        for step, (row, top) in enumerate(zip(ref_rows, got["top_logits"])):
            have = dict((tid, logit) for tid, logit in top)
            if len(have) != len(row):
                failures.append(f"{name} step {step}: {len(have)} logits, want {len(row)}")
                continue
            diff = max(abs(have[i] - row[i]) for i in range(len(row)))
            worst = max(worst, diff)
            if diff > TOL:
                failures.append(f"{name} step {step}: logits differ by {diff:.2e}")
            chosen = got["output_ids"][step]
            best = argmax(row)
            if chosen != best and row[best] - row[chosen] > TOL:
                failures.append(f"{name} step {step}: chose {chosen}, reference argmax {best}")
        if len(got["top_logits"]) != STEPS:
            failures.append(f"{name}: {len(got['top_logits'])} steps, want {STEPS}")
        print(f"{name} ({dtype}): {STEPS} steps, largest logit difference {worst:.2e} (tolerance {TOL})")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
