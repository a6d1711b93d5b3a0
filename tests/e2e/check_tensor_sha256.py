#!/usr/bin/env python3
"""Checks every tensor of a safetensors model against a {name: {shape, dtype, sha256}} file.

Independent of the C++ reader: parses the safetensors header with the standard library only.
Usage: check_tensor_sha256.py MODEL_DIR EXPECTED.json
"""
import hashlib
import json
import struct
import sys
from pathlib import Path


def tensors(model_dir: Path):
    index = model_dir / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else ["model.safetensors"]
    for name in files:
        data = (model_dir / name).read_bytes()
        (header_len,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + header_len])
        base = 8 + header_len
        for tensor, entry in header.items():
            if tensor == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            yield tensor, entry, data[base + begin:base + end]


def main() -> int:
    model_dir, expected_path = Path(sys.argv[1]), Path(sys.argv[2])
    expected = json.loads(expected_path.read_text())
    seen = set()
    failures = 0
    for name, entry, payload in tensors(model_dir):
        seen.add(name)
        want = expected.get(name)
        if want is None:
            print(f"unexpected tensor {name}")
            failures += 1
            continue
        got = {"shape": entry["shape"], "dtype": entry["dtype"], "sha256": hashlib.sha256(payload).hexdigest()}
        if got != want:
            print(f"{name}: got {got}, expected {want}")
            failures += 1
    for name in sorted(set(expected) - seen):
        print(f"missing tensor {name}")
        failures += 1
    print(f"{len(seen)} tensors checked, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
