#!/usr/bin/env node
// Reference side of `llaisys-bench tokenizer`: encodes the same documents with Hugging Face's Rust
// tokenizer (npm `tokenizers`, native binary), single-threaded, and prints one JSON line:
//   {"seconds": best pass, "passes": [...], "tokens": N, "checksum": "..."}
// Usage: node hf_encode.js TOKENIZER_JSON DOCUMENTS_JSON PASSES
'use strict';
// One thread: no Rayon pool for batch work (encode of one string is single-threaded anyway).
process.env.TOKENIZERS_PARALLELISM = 'false';
process.env.RAYON_NUM_THREADS = '1';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const [tokenizerPath, documentsPath, passesText] = process.argv.slice(2);
  if (!tokenizerPath || !documentsPath) {
    console.error('usage: node hf_encode.js TOKENIZER_JSON DOCUMENTS_JSON [PASSES]');
    process.exit(2);
  }
  const passes = Math.max(1, parseInt(passesText || '5', 10));
  const documents = JSON.parse(fs.readFileSync(documentsPath, 'utf8'));
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const times = [];
  let tokens = 0;
  // FNV-1a over all ids in order: the C++ side compares it with its own.
  let checksum = 0xcbf29ce484222325n;
  for (let pass = 0; pass < passes; ++pass) {
    const start = process.hrtime.bigint();
    // One call for all documents: serial in Rust (parallelism off), no per-call JS overhead.
    const results = await tokenizer.encodeBatch(documents, { addSpecialTokens: false });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    times.push(seconds);
    if (pass === 0) {
      for (const encoding of results) {
        for (const id of encoding.getIds()) {
          tokens += 1;
          checksum = ((checksum ^ BigInt(id)) * 0x100000001b3n) & 0xffffffffffffffffn;
        }
      }
    }
  }
  console.log(JSON.stringify({ seconds: Math.min(...times), passes: times, tokens, checksum: checksum.toString(16) }));
}

main().catch((error) => {
  console.error(String(error && error.stack ? error.stack : error));
  process.exit(1);
});
