#!/usr/bin/env python3
"""The plugin SDK as its users see it:
1. `cmake --install` the build tree into a temporary prefix (outside the source and build trees);
2. configure and build a copy of examples/out-of-tree-plugin (Phi3ForCausalLM) against that prefix
   only, with the same compiler: every include path of compile_commands.json lies outside both trees,
   and no file of the example's build names either tree; the plugin links with -Wl,--no-undefined
   (llaisys_add_plugin), loads, and exports llaisys_plugin_entry alone;
3. rewrite the shipped stories260K (Llama weights) in Phi-3's fused layout (llama_to_phi3.py) and
   require the installed llaisys-offline to generate exactly the same prompt ids, output ids and text
   with the Phi-3 plugin (--plugin-dir: the example's build directory, which replaces the default one)
   as with the in-tree llama plugin on the original (the default plugin directory of the install);
4. a narrow sliding_window changes the output (the key is applied), and the Phi-3 plugin refuses, by
   name, config keys it does not implement.
The temporary directory is removed on success and kept (its path printed) on failure.

usage: out_of_tree_plugin.py --cmake CMAKE --build-dir DIR --source-dir DIR --cxx CXX --generator G
                             --build-type T --model DIR
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import llama_to_phi3  # noqa: E402

PROMPTS = ["Once upon a time", "One day, a little dog", "Lily and Ben went to the park", "The sun was"]
MAX_TOKENS = 48
SLIDING_WINDOW = 128  # every layer slides, and no prompt + generation reaches the window


class Failure(Exception):
    pass


# Nothing from the caller's environment may point the install or the example elsewhere.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("DESTDIR", "CMAKE_PREFIX_PATH", "llaisys_DIR", "CPATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH")}


def run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise Failure(f"{shlex.join(str(a) for a in args)} exited with {result.returncode}:\n"
                      f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def include_paths(entry: dict) -> list[Path]:
    args = entry.get("arguments") or shlex.split(entry["command"])
    paths = []
    for i, arg in enumerate(args):
        if arg in ("-I", "-isystem", "-iquote", "-idirafter") and i + 1 < len(args):
            paths.append(args[i + 1])
        elif arg.startswith("-I") and len(arg) > 2:
            paths.append(arg[2:])
    return [(Path(entry["directory"]) / p).resolve() for p in paths]


def build_example(o, prefix: Path, work: Path) -> Path:
    source = work / "example"
    shutil.copytree(o.source_dir / "examples" / "out-of-tree-plugin", source)
    build = work / "example-build"
    run([o.cmake, "-S", source, "-B", build, "-G", o.generator, f"-DCMAKE_BUILD_TYPE={o.build_type}",
         f"-DCMAKE_CXX_COMPILER={o.cxx}", f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
         "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"], env=CLEAN_ENV)
    cache = (build / "CMakeCache.txt").read_text()
    want = f"llaisys_DIR:PATH={prefix / 'lib' / 'cmake' / 'llaisys'}"
    if want not in cache:
        raise Failure(f"find_package(llaisys) did not find the installed package ({want} not in CMakeCache.txt)")
    run([o.cmake, "--build", build], env=CLEAN_ENV)

    trees = [o.source_dir, o.build_dir]
    entries = json.loads((build / "compile_commands.json").read_text())
    if not entries:
        raise Failure("compile_commands.json is empty")
    for entry in entries:
        paths = include_paths(entry)
        if not any(inside(p, prefix) for p in paths):
            raise Failure(f"no include path into the prefix for {entry['file']}: {paths}")
        for p in paths:
            if any(inside(p, tree) for tree in trees):
                raise Failure(f"include path {p} points into the llaisys source or build tree")
    for file in build.rglob("*"):
        if file.is_file() and file.stat().st_size < (4 << 20) and file.suffix not in (".o", ".so", ".a", ".bin"):
            text = file.read_text(errors="replace")
            for tree in trees:
                if str(tree) in text:
                    raise Failure(f"{file} names {tree}: the example must build from the prefix alone")
    plugin = build / "libllaisys-phi3.so"
    if not plugin.exists():
        raise Failure(f"{plugin} was not built")
    if shutil.which("nm"):
        exported = [line.split()[-1] for line in run(["nm", "-D", "--defined-only", plugin]).stdout.splitlines()]
        if exported != ["llaisys_plugin_entry"]:
            raise Failure(f"{plugin.name} exports more than llaisys_plugin_entry: {exported}")
    print(f"built {plugin.name} against {prefix} alone")
    return build


def generate(offline: Path, model: Path, inputs: Path, plugin_dir: Path | None = None) -> dict:
    args = [offline] + (["--plugin-dir", plugin_dir] if plugin_dir else [])
    result = run(args + ["generate", "--model", model, "--temperature", "0", "--progress", "off", inputs])
    if "ignores these keys" in result.stderr:
        raise Failure(f"the plugin ignored config keys:\n{result.stderr}")
    return {r["id"]: r for r in map(json.loads, result.stdout.splitlines())}


def check_same_generation(offline: Path, llama_model: Path, phi3_model: Path, inputs: Path, plugin_dir: Path,
                          work: Path) -> None:
    llama = generate(offline, llama_model, inputs)
    phi3 = generate(offline, phi3_model, inputs, plugin_dir)
    for i, prompt in enumerate(PROMPTS):
        want, got = llama.get(i), phi3.get(i)
        if want is None or "error" in want or got is None or "error" in got:
            raise Failure(f"{prompt!r}: no result (llama {want}, phi3 {got})")
        if len(want["output_ids"]) != MAX_TOKENS:
            raise Failure(f"{prompt!r}: llama generated {len(want['output_ids'])} tokens, not {MAX_TOKENS}")
        for field in ("prompt_ids", "output_ids", "text", "finish_reason"):
            if got[field] != want[field]:
                raise Failure(f"{prompt!r}: {field} differs:\n  phi3  {got[field]!r}\n  llama {want[field]!r}")
        print(f"{prompt!r}: {MAX_TOKENS} tokens equal: {want['text'][:60]!r}...")

    # The window is applied, not merely accepted: 8 positions change what the stories become.
    narrow = work / "phi3-window-8"
    llama_to_phi3.convert(llama_model, narrow, 8)
    windowed = generate(offline, narrow, inputs, plugin_dir)
    if all(windowed[i]["output_ids"] == llama[i]["output_ids"] for i in range(len(PROMPTS))):
        raise Failure("sliding_window 8 generated what full attention does")
    print("sliding_window 8 changes the output")


def check_refusals(offline: Path, plugin_dir: Path, model: Path, inputs: Path, work: Path) -> None:
    base = json.loads((model / "config.json").read_text())
    half_rotary = base["hidden_size"] // base["num_attention_heads"] // 2
    longrope = {"type": "longrope", "short_factor": [1.0] * half_rotary, "long_factor": [1.0] * half_rotary}
    for key, value in [("rope_scaling", longrope), ("rope_scaling", {"rope_type": "linear", "factor": 2.0}),
                       ("hidden_act", "gelu_new"), ("partial_rotary_factor", 0.75),
                       ("layer_types", ["sliding_attention"] * base["num_hidden_layers"])]:
        variant = work / f"refuse-{key}"
        shutil.rmtree(variant, ignore_errors=True)
        shutil.copytree(model, variant)
        config = dict(base, **{key: value})
        (variant / "config.json").write_text(json.dumps(config))
        result = subprocess.run([str(offline), "--plugin-dir", str(plugin_dir), "generate", "--model", str(variant),
                                 "--progress", "off", str(inputs)], capture_output=True, text=True)
        if result.returncode == 0 or key not in result.stderr or "not supported" not in result.stderr:
            raise Failure(f"{key} = {json.dumps(value)} was not refused by name:\n{result.stderr[-2000:]}")
    print("refused by name: rope_scaling (longrope, linear), hidden_act, partial_rotary_factor, layer_types")


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ("cmake", "build-dir", "source-dir", "cxx", "generator", "build-type", "model"):
        parser.add_argument(f"--{flag}", required=True)
    o = parser.parse_args()
    o.source_dir, o.build_dir = Path(o.source_dir).resolve(), Path(o.build_dir).resolve()
    work = Path(tempfile.mkdtemp(prefix="llaisys-sdk-")).resolve()
    if any(inside(work, tree) for tree in (o.source_dir, o.build_dir)):
        print(f"FAIL the temporary directory {work} lies inside the source or build tree")
        return 1
    try:
        prefix = work / "prefix"
        config = ["--config", o.build_type] if o.build_type else []
        run([o.cmake, "--install", o.build_dir, "--prefix", prefix, *config], env=CLEAN_ENV)
        for f in ["bin/llaisys-offline", "lib/llaisys/plugins/libllaisys-llama.so", "include/llaisys/core/status.hpp",
                  "include/llaisys/ops/linear.hpp", "include/llaisys/decoder/decoder_plugin.hpp",
                  "lib/cmake/llaisys/llaisysConfig.cmake", "lib/cmake/llaisys/plugin.map"]:
            if not (prefix / f).exists():
                raise Failure(f"the install lacks {f}")
        offline = prefix / "bin" / "llaisys-offline"

        example_build = build_example(o, prefix, work)
        listed = run([offline, "--plugin-dir", example_build, "plugins"])
        if not listed.stdout.startswith("phi3 0.1.0") or "Phi3ForCausalLM" not in listed.stdout or listed.stderr:
            raise Failure(f"the plugin directory does not serve Phi3ForCausalLM alone:\n{listed.stdout}{listed.stderr}")

        phi3_model = work / "phi3-stories260K"
        llama_to_phi3.convert(Path(o.model), phi3_model, SLIDING_WINDOW)
        inputs = work / "prompts.jsonl"
        inputs.write_text("".join(json.dumps({"id": i, "prompt": p, "max_tokens": MAX_TOKENS, "ignore_eos": True}) + "\n"
                                  for i, p in enumerate(PROMPTS)))
        # --plugin-dir replaces the default directory: without it the installed plugins (no phi3) load.
        unserved = subprocess.run([str(offline), "generate", "--model", str(phi3_model), "--progress", "off",
                                   str(inputs)], capture_output=True, text=True)
        if unserved.returncode == 0 or "unknown architecture 'Phi3ForCausalLM'" not in unserved.stderr:
            raise Failure(f"the installed plugin directory served Phi3ForCausalLM:\n{unserved.stderr[-2000:]}")

        check_same_generation(offline, Path(o.model), phi3_model, inputs, example_build, work)
        check_refusals(offline, example_build, phi3_model, inputs, work)
    except Failure as failure:
        print(f"FAIL {failure}\n(kept {work})")
        return 1
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
