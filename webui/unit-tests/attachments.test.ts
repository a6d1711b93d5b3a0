// Attached text files (attachments.ts): the fence that nothing inside can close, the language from
// the extension, and refusal of binary and oversized files.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ATTACHMENT_MAX_BYTES, attachmentBlock, attachmentFromBytes, attachmentSizeError, fenceFor } from "../src/attachments";
import { languageFromFenceInfo, languageFromFileName } from "../src/languages";
import { renderMarkdown } from "../src/markdown";

const bytes = (text: string) => new TextEncoder().encode(text);

test("the fence is longer than any run of backticks in the file", () => {
  assert.equal(fenceFor("plain"), "```");
  assert.equal(fenceFor("a ``` b"), "````");
  assert.equal(fenceFor("x\n`````\ny ` z ``"), "``````");
  assert.equal(fenceFor(""), "```");
});

test("a file becomes a block labelled with its name and language, whose content renders intact", () => {
  const source = 'int main() {\n  // ``` not a fence end\n  return 0;\n}\n````\n';
  const block = attachmentBlock("main.cpp", source);
  assert.equal(block, `main.cpp:\n\`\`\`\`\`cpp\n${source}\`\`\`\`\``);
  const html = renderMarkdown(block);
  assert.match(html, /<span class="code-lang">cpp<\/span>/);
  assert.ok(html.includes("// ``` not a fence end\n  return 0;\n}\n````\n</code>"), html);
  assert.equal(attachmentBlock("notes", "no newline"), "notes:\n```\nno newline\n```");
  assert.equal(attachmentBlock("a\nb.txt", "x\n"), "a b.txt:\n```plaintext\nx\n```");
});

test("languages from extensions and fence names agree", () => {
  const cases: [string, string | null][] = [
    ["a.py", "python"], ["b.HPP", "cpp"], ["kernel.cu", "cpp"], ["x.ts", "typescript"], ["Dockerfile", "dockerfile"],
    ["Makefile", "makefile"], ["CMakeLists.txt", "cmake"], ["data.jsonl", "json"], ["notes.txt", "plaintext"],
    ["archive.tar.gz", null], ["README", null], [".bashrc", null],
  ];
  for (const [name, language] of cases) assert.equal(languageFromFileName(name), language, name);
  assert.equal(languageFromFenceInfo("C++ {title}"), "cpp");
  assert.equal(languageFromFenceInfo("js"), "javascript");
  assert.equal(languageFromFenceInfo('html" onmouseover="x'), null);
  assert.equal(languageFromFenceInfo(""), null);
});

test("UTF-8 text is attached; binary, invalid UTF-8 and oversized files are refused", () => {
  const ok = attachmentFromBytes("hello.py", bytes("\uFEFFprint('héllo')\n"));
  assert.deepEqual(ok, { ok: true, text: "hello.py:\n```python\nprint('héllo')\n```" });
  const nul = attachmentFromBytes("image.png", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
  assert.equal(nul.ok, false);
  if (!nul.ok) assert.match(nul.error, /"image.png" is not a text file/);
  const latin1 = attachmentFromBytes("old.txt", new Uint8Array([0x63, 0x61, 0x66, 0xe9]));
  assert.equal(latin1.ok, false);
  const big = attachmentFromBytes("big.log", new Uint8Array(ATTACHMENT_MAX_BYTES + 1).fill(0x61));
  assert.equal(big.ok, false);
  if (!big.ok) assert.match(big.error, /"big.log" is 256 KB: files up to 256 KB can be attached/);
  assert.equal(attachmentSizeError("x", ATTACHMENT_MAX_BYTES), null);
  assert.match(attachmentSizeError("x", 3 * 1024 * 1024) ?? "", /is 3 MB/);
  assert.ok(attachmentFromBytes("edge.txt", new Uint8Array(ATTACHMENT_MAX_BYTES).fill(0x61)).ok);
});
