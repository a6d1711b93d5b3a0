#!/usr/bin/env python3
"""llaisys-mkmodel against a tiny-model fixture (tests/data/<fixture>/, its WEIGHTS.md): the model of
SHAPE must hold every tensor of tensors.sha256.json with the same shape, dtype and sha256 (checked by
check_tensor_sha256.py beside this script), in that order, under the header rules (metadata
{"format":"pt"}, the JSON header padded with spaces to a multiple of 8 bytes, data in tensor order
without gaps); config.json and generation_config.json must be JSON-equal to the fixture's, and the
tokenizer files identical to TOKENIZER_DIR's.

usage: mkmodel_fixture.py MKMODEL SHAPE FIXTURE_DIR TOKENIZER_DIR WORKDIR
"""
import json
import struct
import subprocess
import sys
from pathlib import Path


def header_problems(safetensors: Path, expected_order):
    data = safetensors.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    raw = data[8:8 + header_len]
    header = json.loads(raw)
    problems = []
    if header_len % 8 != 0 or not raw.rstrip(b" ").endswith(b"}"):
        problems.append(f"header length {header_len} is not a multiple of 8 padded with spaces")
    if header.get("__metadata__") != {"format": "pt"}:
        problems.append(f"__metadata__ is {header.get('__metadata__')}")
    names = [name for name in header if name != "__metadata__"]
    if names != expected_order:
        problems.append("tensors are not in the order of tensors.sha256.json (WEIGHTS.md's)")
    offset = 0
    for name in names:
        begin, end = header[name]["data_offsets"]
        if begin != offset:
            problems.append(f"{name} starts at {begin}, want {offset} (data in tensor order, no gaps)")
        offset = end
    if 8 + header_len + offset != len(data):
        problems.append(f"the file has {len(data) - 8 - header_len - offset} bytes after the last tensor")
    return problems


def main() -> int:
    mkmodel, shape, fixture, tokenizer_dir, work = sys.argv[1:6]
    fixture, tokenizer_dir, work = Path(fixture), Path(tokenizer_dir), Path(work)
    work.mkdir(parents=True, exist_ok=True)
    model = work / shape
    subprocess.run([mkmodel, "--shape", shape, "--force", str(model)], check=True, stdout=subprocess.DEVNULL)
    failures = []
    sha = subprocess.run([sys.executable, str(Path(__file__).with_name("check_tensor_sha256.py")), str(model),
                          str(fixture / "tensors.sha256.json")], capture_output=True, text=True)
    print(sha.stdout, end="")
    if sha.returncode != 0:
        failures.append("tensor checksums differ from tensors.sha256.json")
    expected_order = list(json.loads((fixture / "tensors.sha256.json").read_text()))
    failures += header_problems(model / "model.safetensors", expected_order)
    for name in ("config.json", "generation_config.json"):
        if json.loads((model / name).read_text()) != json.loads((fixture / name).read_text()):
            failures.append(f"{name} is not JSON-equal to {fixture / name}")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (model / name).read_bytes() != (tokenizer_dir / name).read_bytes():
            failures.append(f"{name} differs from {tokenizer_dir / name}")
    for f in failures:
        print("FAIL", f)
    if not failures:
        print(f"{shape}: tensors, header, config.json, generation_config.json and tokenizer match {fixture.name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
