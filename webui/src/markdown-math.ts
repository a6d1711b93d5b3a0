// Math delimiters for markdown-it: $...$ and \(...\) inline; $$...$$ and \[...\] displayed, as a
// block of their own lines or inside a paragraph. The rules only find the math: each piece becomes
// an element holding its TeX source as escaped text (<span class="math" data-math="inline">), which
// ui/math.ts typesets with KaTeX once the page has it. Code spans and code blocks are parsed first
// and keep their dollars.
//
// Single dollars follow Pandoc's rule, so prices stay text ("$5 and $10"): the opening $ is not
// followed by a space; the closing $, the next one that is not escaped, is not preceded by a space
// and not followed by a digit (else the opening $ is just a dollar). Display math may not contain a
// blank line (neither may TeX's), so a stray $$ cannot swallow the rest of an answer; an unclosed delimiter stays text (while an answer streams, its math
// appears once the closing delimiter arrives).
import type MarkdownIt from "markdown-it";
import type { StateBlock, StateInline } from "markdown-it";

interface Delimiters {
  open: string;
  close: string;
  display: boolean;
}

// Longest first: "$$" must be tried before "$".
const INLINE_DELIMITERS: readonly Delimiters[] = [
  { open: "$$", close: "$$", display: true },
  { open: "\\[", close: "\\]", display: true },
  { open: "\\(", close: "\\)", display: false },
  { open: "$", close: "$", display: false },
];

const BLOCK_DELIMITERS: readonly Delimiters[] = [
  { open: "$$", close: "$$", display: true },
  { open: "\\[", close: "\\]", display: true },
];

const isSpace = (ch: string | undefined): boolean => ch !== undefined && /\s/.test(ch);
const isDigit = (ch: string | undefined): boolean => ch !== undefined && ch >= "0" && ch <= "9";

// Where the closing delimiter of math opened at `from` (just after the opener) is, or -1. It is
// the first one (a backslash-escaped \$ does not count); math holds no code span, so a backtick
// before it means there is none.
function findClose(src: string, from: number, d: Delimiters): number {
  let at = src.indexOf(d.close, from);
  while (d.open === "$" && at > 0 && src[at - 1] === "\\") at = src.indexOf(d.close, at + 1);
  if (at < 0 || src.slice(from, at).includes("`")) return -1;
  if (d.open === "$" && (isSpace(src[at - 1]) || isDigit(src[at + 1]))) return -1;
  return at;
}

function mathInline(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  const start = state.pos;
  if (src[start] !== "$" && src[start] !== "\\") return false;
  for (const d of INLINE_DELIMITERS) {
    if (!src.startsWith(d.open, start)) continue;
    const from = start + d.open.length;
    if (d.open === "$" && (from >= state.posMax || isSpace(src[from]))) return false;
    const close = findClose(src, from, d);
    if (close < 0 || close + d.close.length > state.posMax) return false;
    const tex = src.slice(from, close);
    if (tex.trim().length === 0 || /\n[ \t]*\n/.test(tex)) return false;
    if (!silent) {
      const token = state.push("math_inline", "math", 0);
      token.content = d.display ? tex.trim() : tex;
      token.markup = d.open;
      token.meta = { display: d.display };
    }
    state.pos = close + d.close.length;
    return true;
  }
  return false;
}

function mathBlock(state: StateBlock, startLine: number, endLine: number, silent: boolean): boolean {
  if (state.sCount[startLine]! - state.blkIndent >= 4) return false; // indented code
  const lineText = (line: number): string => state.src.slice(state.bMarks[line]! + state.tShift[line]!, state.eMarks[line]);
  const first = lineText(startLine);
  const d = BLOCK_DELIMITERS.find((x) => first.startsWith(x.open));
  if (d === undefined) return false;
  // The math runs until the line that ends with the closing delimiter (it may be the first line).
  let text = first.slice(d.open.length);
  let line = startLine;
  for (;;) {
    const trimmed = text.trimEnd();
    if (trimmed.endsWith(d.close) && (line > startLine || trimmed.length >= d.close.length)) {
      text = trimmed.slice(0, trimmed.length - d.close.length);
      break;
    }
    line += 1;
    if (line >= endLine) return false;
    const next = lineText(line);
    if (next.trim().length === 0 || state.sCount[line]! < state.blkIndent) return false;
    text += `\n${next}`;
  }
  if (text.trim().length === 0 || findClose(text, 0, d) >= 0) return false; // "$$a$$ b $$c$$" is inline math
  if (silent) return true;
  const token = state.push("math_block", "math", 0);
  token.block = true;
  token.content = text.trim();
  token.markup = d.open;
  token.map = [startLine, line + 1];
  state.line = line + 1;
  return true;
}

export function mathPlugin(md: MarkdownIt): void {
  // Before "escape", which would otherwise read \( and \[ as escaped brackets.
  md.inline.ruler.before("escape", "math_inline", mathInline);
  md.block.ruler.before("paragraph", "math_block", mathBlock, { alt: ["paragraph", "reference", "blockquote", "list"] });
  const escape = md.utils.escapeHtml;
  md.renderer.rules.math_inline = (tokens, idx) => {
    const token = tokens[idx]!;
    const kind = token.meta?.display === true ? "display" : "inline";
    return `<span class="math math-${kind}" data-math="${kind}">${escape(token.content)}</span>`;
  };
  md.renderer.rules.math_block = (tokens, idx) => `<div class="math math-display" data-math="display">${escape(tokens[idx]!.content)}</div>\n`;
}
