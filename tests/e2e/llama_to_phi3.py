#!/usr/bin/env python3
"""Rewrites a Llama model directory (LlamaForCausalLM, no biases) in Phi-3's layout (Phi3ForCausalLM):
the same weights, with q/k/v fused into self_attn.qkv_proj [q + 2 kv, hidden] and gate/up into
mlp.gate_up_proj [2 intermediate, hidden] (gate rows first). Tensors are row-major, so concatenating
along dim 0 is concatenating their bytes. Python standard library only.

usage: llama_to_phi3.py SRC_DIR DST_DIR [--sliding-window N]
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "special_tokens_map.json")


def read_safetensors(path: Path) -> dict[str, tuple[str, list[int], bytes]]:
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    data = raw[8 + header_len:]
    header.pop("__metadata__", None)
    return {name: (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
            for name, t in header.items()}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data section starts 8-byte aligned
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, data in tensors.values():
            f.write(data)


def fuse(tensors: dict, names: list[str]) -> tuple[str, list[int], bytes]:
    parts = [tensors.pop(name) for name in names]
    dtypes = {dtype for dtype, _, _ in parts}
    columns = {tuple(shape[1:]) for _, shape, _ in parts}
    assert len(dtypes) == 1 and len(columns) == 1, f"cannot fuse {names}: {[p[:2] for p in parts]}"
    rows = sum(shape[0] for _, shape, _ in parts)
    return parts[0][0], [rows, *parts[0][1][1:]], b"".join(data for _, _, data in parts)


def convert(src: Path, dst: Path, sliding_window: int | None) -> None:
    config = json.loads((src / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"], config["architectures"]
    assert not config.get("attention_bias") and not config.get("mlp_bias"), "Phi-3 has no biases"
    tensors = read_safetensors(src / "model.safetensors")
    fused = {}  # first part -> (fused name, parts in row order)
    for i in range(config["num_hidden_layers"]):
        attn, mlp = f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"
        fused[f"{attn}.q_proj.weight"] = (f"{attn}.qkv_proj.weight", [f"{attn}.{p}_proj.weight" for p in "qkv"])
        fused[f"{mlp}.gate_proj.weight"] = (f"{mlp}.gate_up_proj.weight", [f"{mlp}.{p}_proj.weight" for p in ("gate", "up")])
    parts = {part for _, names in fused.values() for part in names}
    out = {}
    for name in list(tensors):  # file order
        if name in fused:
            out[fused[name][0]] = fuse(tensors, fused[name][1])
        elif name not in parts:
            out[name] = tensors.pop(name)
    assert not tensors, f"tensors left unconverted: {sorted(tensors)}"

    dst.mkdir(parents=True, exist_ok=True)
    write_safetensors(dst / "model.safetensors", out)
    for key in ("attention_bias", "mlp_bias"):
        config.pop(key, None)
    config.update({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "sliding_window": sliding_window,
                   "original_max_position_embeddings": config["max_position_embeddings"], "rope_scaling": None,
                   "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attention_dropout": 0.0})
    (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copyfile(src / name, dst / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--sliding-window", type=int, default=None)
    args = parser.parse_args()
    convert(args.src, args.dst, args.sliding_window)


if __name__ == "__main__":
    main()
