#!/usr/bin/env python3
"""Writes structured-output test cases from the vendored corpus (python3, standard library only).

Outputs, in --out-dir:
  REQUESTS.jsonl  input for `llaisys-offline generate` (one request per line):
                  {"id", "prompt", "guided_json" | "guided_regex" | "guided_choice", "seed",
                   "temperature", "max_tokens"}
  CASES.jsonl     what tests/e2e/structured/validate.mjs checks the results against:
                  {"id", "kind": "json_schema" | "regex" | "choice", "schema" | "regex" | "choices",
                   ["expect": "error"]}

Ids: "<schema file>#<seed>" (e.g. "glaive-book_hotel.json#2"), "regex:<name>#<seed>",
"choice:<name>#<seed>". Schemas are taken in file-name order; --limit keeps the first N of them (regexes
and choice lists are limited the same way). With --unsupported, the schemas of
tests/data/json-schemas-unsupported/ are added once each (seed 0) with "expect": "error": the server or
offline app must refuse them.

Example:
  python3 tests/e2e/structured/make_cases.py --out-dir /tmp/so --seeds 0,1,2,3 --max-tokens 256
  llaisys-offline generate --model MODEL /tmp/so/REQUESTS.jsonl > /tmp/so/RESULTS.jsonl
  node tests/e2e/structured/validate.mjs --results /tmp/so/RESULTS.jsonl --cases /tmp/so/CASES.jsonl --min-stop 100
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SCHEMAS = os.path.join(ROOT, "tests", "data", "json-schemas")
UNSUPPORTED = os.path.join(ROOT, "tests", "data", "json-schemas-unsupported")

PROMPTS = {
    "json_schema": "Output JSON:\n",
    "regex": "Output text that matches the pattern:\n",
    "choice": "Choose one option:\n",
}


def schema_files(directory):
    return sorted(f for f in os.listdir(directory)
                  if f.endswith(".json") and f not in ("regexes.json", "choices.json"))


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def parse_seeds(text):
    try:
        seeds = [int(s) for s in text.split(",") if s.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds wants a comma-separated list of integers, got {text!r}")
    if not seeds:
        raise argparse.ArgumentTypeError("--seeds is empty")
    return seeds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True, help="where to write REQUESTS.jsonl and CASES.jsonl")
    ap.add_argument("--seeds", type=parse_seeds, default=[0, 1, 2, 3], help="comma-separated (default 0,1,2,3)")
    ap.add_argument("--max-tokens", type=int, default=256, help="max_tokens of every request (default 256)")
    ap.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default 1.0)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N schemas (and regexes, choice lists)")
    ap.add_argument("--kinds", default="json_schema,regex,choice",
                    help="comma-separated subset of json_schema,regex,choice (default all)")
    ap.add_argument("--unsupported", action="store_true",
                    help="also add the refused schemas, each once, expecting an error line")
    ap.add_argument("--schemas-dir", default=SCHEMAS, help=argparse.SUPPRESS)
    ap.add_argument("--unsupported-dir", default=UNSUPPORTED, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    kinds = {k.strip() for k in args.kinds.split(",") if k.strip()}
    unknown = kinds - set(PROMPTS)
    if unknown:
        ap.error(f"unknown kinds: {', '.join(sorted(unknown))}")
    if args.max_tokens < 1:
        ap.error("--max-tokens must be >= 1")

    def limited(items):
        return items if args.limit is None else items[: args.limit]

    requests, cases = [], []

    def add(case_id, kind, guided_key, guided_value, seed, case_field, expect=None):
        requests.append({"id": case_id, "prompt": PROMPTS[kind], guided_key: guided_value, "seed": seed,
                         "temperature": args.temperature, "max_tokens": args.max_tokens})
        case = {"id": case_id, "kind": kind, case_field: guided_value}
        if expect:
            case["expect"] = expect
        cases.append(case)

    if "json_schema" in kinds:
        for f in limited(schema_files(args.schemas_dir)):
            schema = load_json(os.path.join(args.schemas_dir, f))
            for seed in args.seeds:
                add(f"{f}#{seed}", "json_schema", "guided_json", schema, seed, "schema")
        if args.unsupported:
            for f in schema_files(args.unsupported_dir):
                schema = load_json(os.path.join(args.unsupported_dir, f))
                add(f"unsupported:{f}#0", "json_schema", "guided_json", schema, 0, "schema", expect="error")
    if "regex" in kinds:
        for r in limited(load_json(os.path.join(args.schemas_dir, "regexes.json"))):
            for seed in args.seeds:
                add(f"regex:{r['name']}#{seed}", "regex", "guided_regex", r["regex"], seed, "regex")
    if "choice" in kinds:
        for c in limited(load_json(os.path.join(args.schemas_dir, "choices.json"))):
            for seed in args.seeds:
                add(f"choice:{c['name']}#{seed}", "choice", "guided_choice", c["choices"], seed, "choices")

    os.makedirs(args.out_dir, exist_ok=True)
    for name, rows in (("REQUESTS.jsonl", requests), ("CASES.jsonl", cases)):
        with open(os.path.join(args.out_dir, name), "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    counts = {}
    for c in cases:
        counts[c["kind"]] = counts.get(c["kind"], 0) + 1
    print(f"{len(cases)} cases ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}) in {args.out_dir}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
