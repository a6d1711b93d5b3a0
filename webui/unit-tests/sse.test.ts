// The SSE parser against the WHATWG event-stream rules, fed in every possible split.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SseParser, type SseEvent } from "../src/api/sse";

function parseInPieces(text: string, cuts: number[]): SseEvent[] {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let start = 0;
  for (const cut of [...cuts, text.length]) {
    events.push(...parser.push(text.slice(start, cut)));
    start = cut;
  }
  parser.finish();
  return events;
}

const STREAM =
  ': keep-alive\n\n' +
  'data: {"a":1}\n\n' +
  'data:{"b":2}\r\n\r\n' +
  'event: custom\ndata: line one\ndata: line two\n\n' +
  'data: {"c":3}\r\r' +
  'id: 7\nretry: 100\n\n' +
  'data: [DONE]\n\n' +
  'data: never dispatched';

const EXPECTED: SseEvent[] = [
  { event: "message", data: '{"a":1}' },
  { event: "message", data: '{"b":2}' },
  { event: "custom", data: "line one\nline two" },
  { event: "message", data: '{"c":3}' },
  { event: "message", data: "[DONE]" },
];

test("parses a whole stream: comments, CRLF, CR, multi-line data, event names, no data", () => {
  assert.deepEqual(parseInPieces(STREAM, []), EXPECTED);
});

test("gives the same events however the stream is split (every single cut, and byte by byte)", () => {
  for (let cut = 1; cut < STREAM.length; cut++) {
    assert.deepEqual(parseInPieces(STREAM, [cut]), EXPECTED, `split at ${cut}: ${JSON.stringify(STREAM.slice(cut - 2, cut + 2))}`);
  }
  const everyChar = Array.from({ length: STREAM.length - 1 }, (_, i) => i + 1);
  assert.deepEqual(parseInPieces(STREAM, everyChar), EXPECTED);
});

test("a field without a colon and a value without the space are read as the standard says", () => {
  assert.deepEqual(parseInPieces("data\n\ndata:x\n\ndata:  two spaces\n\n", []), [
    { event: "message", data: "" },
    { event: "message", data: "x" },
    { event: "message", data: " two spaces" },
  ]);
});
