#!/usr/bin/env node
// Regenerates tests/data/tokenizer-vectors/stories260k-cases.json: the stories260K tokenizer
// (models/stories260K/tokenizer.json, SentencePiece-style BPE with byte fallback) run through
// Hugging Face's own Rust `tokenizers` (npm, installed in bench/tokenizer by install-deps.sh).
//   node tests/unit/text/gen_stories260k_cases.js
// Encode cases: text -> ids with and without the post-processor's BOS, and the decode of those ids.
// Decode cases: seeded random id lists (byte pieces included, so invalid UTF-8 runs occur), decoded
// with and without skipping special tokens.
'use strict';
const fs = require('fs');
const path = require('path');
const root = path.resolve(__dirname, '../../..');
const { Tokenizer } = require(path.join(root, 'bench/tokenizer/node_modules/tokenizers'));

const texts = [
  'Once upon a time',
  'Once upon a time, there was a little girl named Lily.',
  '', ' ', '   ', 'a', ' a', 'a ', '  two  spaces  ', '\ttab\tand\nnewline\n', '\n\n',
  'Lily\'s mom said, "Lily, let\'s go to the park."',
  'Numbers: 0 1 23 456 7890 3.14 -5',
  'café naïve résumé', 'Ünïcödé', '日本語のテキスト', 'emoji 🙂🚀 end', 'mixed é🙂x',
  'ZWJ 👩‍👩‍👧 family', 'combining e\u0301 vs \u00e9',
  '<s>', '</s>', '<unk>', 'text <s> inside </s> text', '<s><s>', 'a<s>b',
  '<0x41> is not a byte token in text', '▁ already a metaspace', '▁▁', 'under_score and ▁mix',
  'UPPER lower MiXeD', 'The End.', '!!!???...', '(brackets) [square] {curly}',
  'A very long word: supercalifragilisticexpialidocious',
  'The little dog ran to the big tree. He was happy!',
  '\u00a0non-breaking\u00a0space', 'line\r\nwindows', '\u0000nul', 'back\\slash /slash',
];

// xorshift32, so the file regenerates identically.
let state = 0x2545f491;
function random() {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state / 4294967296;
}

async function main() {
  const tokenizer = Tokenizer.fromFile(path.join(root, 'models/stories260K/tokenizer.json'));
  const encode = [];
  for (const text of texts) {
    const plain = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
    const special = (await tokenizer.encode(text, null, { addSpecialTokens: true })).getIds();
    const decoded = await tokenizer.decode(special, true);
    encode.push({ text, ids: plain, ids_with_special: special, decoded });
  }
  const decode = [];
  const vocab = tokenizer.getVocabSize(true);
  for (let i = 0; i < 200; ++i) {
    const length = 1 + Math.floor(random() * 12);
    const ids = [];
    for (let j = 0; j < length; ++j) {
      // Half of the picks are byte pieces (<0x00>..<0xFF> are ids 3..258) or specials.
      const r = random();
      ids.push(r < 0.4 ? 3 + Math.floor(random() * 256) : r < 0.45 ? Math.floor(random() * 3) : Math.floor(random() * vocab));
    }
    decode.push({ ids, text: await tokenizer.decode(ids, true), text_with_special: await tokenizer.decode(ids, false) });
  }
  const out = {
    source: 'models/stories260K/tokenizer.json through Hugging Face tokenizers (npm ' +
      require(path.join(root, 'bench/tokenizer/node_modules/tokenizers/package.json')).version +
      '); regenerate with node tests/unit/text/gen_stories260k_cases.js',
    encode, decode,
  };
  const target = path.join(root, 'tests/data/tokenizer-vectors/stories260k-cases.json');
  fs.writeFileSync(target, JSON.stringify(out, null, 1) + '\n');
  console.log(`wrote ${encode.length} encode and ${decode.length} decode cases to ${target}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
