// Text files attached to a message. Pure: ui/composer.ts reads the files and puts the result in
// the message box; unit-tested in unit-tests/attachments.test.ts.
//
// A file becomes a fenced code block in the message text, labelled with its name and, when its
// extension is known, its language. The fence is longer than any run of backticks in the file, so
// nothing inside can close it. Files over ATTACHMENT_MAX_BYTES, and files that are not UTF-8 text
// (a NUL byte, or bytes that are not UTF-8), are refused with a message.
import { languageFromFileName } from "./languages";

export const ATTACHMENT_MAX_BYTES = 256 * 1024;

export type AttachmentResult = { ok: true; text: string } | { ok: false; error: string };

// Why a file of `sizeBytes` cannot be attached, or null when its size is fine.
export function attachmentSizeError(fileName: string, sizeBytes: number): string | null {
  if (sizeBytes <= ATTACHMENT_MAX_BYTES) return null;
  return `"${displayName(fileName)}" is ${formatBytes(sizeBytes)}: files up to ${formatBytes(ATTACHMENT_MAX_BYTES)} can be attached.`;
}

// The message text for a file's bytes, or why it cannot be attached.
export function attachmentFromBytes(fileName: string, bytes: Uint8Array): AttachmentResult {
  const sizeError = attachmentSizeError(fileName, bytes.length);
  if (sizeError !== null) return { ok: false, error: sizeError };
  const binary = { ok: false, error: `"${displayName(fileName)}" is not a text file (only UTF-8 text can be attached).` } as const;
  if (bytes.includes(0)) return binary;
  let content: string;
  try {
    content = new TextDecoder("utf-8", { fatal: true }).decode(bytes); // also drops a byte order mark
  } catch {
    return binary;
  }
  return { ok: true, text: attachmentBlock(fileName, content) };
}

// The shortest fence of backticks (at least three) that no run of backticks in `content` can close.
export function fenceFor(content: string): string {
  let longest = 0;
  for (const run of content.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return "`".repeat(Math.max(3, longest + 1));
}

// "name.py:\n```python\n<content>\n```"
export function attachmentBlock(fileName: string, content: string): string {
  const fence = fenceFor(content);
  const language = languageFromFileName(fileName) ?? "";
  const body = content.length === 0 || content.endsWith("\n") ? content : `${content}\n`;
  return `${displayName(fileName)}:\n${fence}${language}\n${body}${fence}`;
}

// The name on one line (a file name may hold control characters).
function displayName(fileName: string): string {
  return fileName.replace(/[\u0000-\u001f\u007f]+/g, " ").trim() || "file";
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 102.4) / 10} KB`;
  return `${Math.round(n / (1024 * 102.4)) / 10} MB`;
}
