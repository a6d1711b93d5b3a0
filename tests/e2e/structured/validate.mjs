#!/usr/bin/env node
// CLI of the structured-output validator:
//   node tests/e2e/structured/validate.mjs --results RESULTS.jsonl --cases CASES.jsonl [--min-stop N]
//        [--fail-on-refusal] [--allow-missing] [--strict-duplicates] [--json REPORT.json]
// The checks live in tests/e2e/server/lib/structured-validate.mjs, inside the npm package whose
// node_modules hold ajv and ajv-formats (`npm ci` in tests/e2e/server, as scripts/install-deps.sh does).
import { main } from "../server/lib/structured-validate.mjs";

process.exitCode = main(process.argv.slice(2));
