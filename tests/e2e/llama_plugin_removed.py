#!/usr/bin/env python3
"""The llama plugin is its own shared library, found by the registry: with the full plugin directory
both stories260K (Llama) and a tiny Qwen2 generate; with libllaisys-llama.so removed from a copy of
the directory, stories260K fails with the registry's clear "unknown architecture" error (naming what
is served) and Qwen2 keeps working.

usage: llama_plugin_removed.py OFFLINE MKMODEL PLUGIN_DIR STORIES_DIR WORKDIR
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path


def main() -> int:
    offline, mkmodel, plugin_dir, stories, work = sys.argv[1:6]
    work = Path(work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    qwen2 = work / "tiny-qwen2"
    subprocess.run([mkmodel, "--shape", "tiny", "--force", str(qwen2)], check=True, stdout=subprocess.DEVNULL)
    without = work / "plugins-without-llama"
    without.mkdir()
    for so in Path(plugin_dir).glob("*.so"):
        if so.name != "libllaisys-llama.so":
            shutil.copy(so, without / so.name)
    failures = []

    def run(plugins, *args, stdin=""):
        return subprocess.run([offline, "--threads", "1", "--plugin-dir", str(plugins), *args], input=stdin, capture_output=True,
                              text=True)

    def generate(plugins, model):
        line = json.dumps({"prompt": "Once upon a time", "max_tokens": 8})
        return run(plugins, "generate", "--model", str(model), "--progress", "off", stdin=line + "\n")

    listing = run(plugin_dir, "plugins").stdout
    if "LlamaForCausalLM" not in listing or "Qwen2ForCausalLM" not in listing:
        failures.append(f"the full plugin directory should serve Llama and Qwen2:\n{listing}")
    listing = run(without, "plugins").stdout
    if "LlamaForCausalLM" in listing or "Qwen2ForCausalLM" not in listing:
        failures.append(f"without the llama plugin only Qwen2 should be served:\n{listing}")

    for plugins, label in ((plugin_dir, "full"), (without, "without llama")):
        result = generate(plugins, qwen2)
        out = result.stdout.splitlines()
        if result.returncode != 0 or len(out) != 1 or len(json.loads(out[0]).get("output_ids", [])) != 8:
            failures.append(f"Qwen2 should generate 8 tokens ({label}): rc {result.returncode}, {result.stdout}"
                            f"{result.stderr}")

    result = generate(plugin_dir, stories)
    if result.returncode != 0 or not json.loads(result.stdout.splitlines()[0])["text"].startswith(","):
        failures.append(f"stories260K should continue 'Once upon a time' with ', there was...': {result.stdout}"
                        f"{result.stderr}")
    result = generate(without, stories)
    want = "unknown architecture 'LlamaForCausalLM': no loaded plugin serves it"
    if result.returncode == 0 or want not in result.stderr or "Qwen2ForCausalLM" not in result.stderr:
        failures.append(f"stories260K without the llama plugin should fail with {want!r} (and list what is "
                        f"served): rc {result.returncode}, stderr {result.stderr!r}")
    else:
        print("without the llama plugin:", result.stderr.strip().splitlines()[-1])
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
