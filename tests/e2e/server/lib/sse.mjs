// Raw SSE: a streaming POST over node:http collecting the body's raw byte chunks with their arrival
// times, and a strict check of the contract's framing (every block `data: ...\n\n` or a `:` comment,
// valid UTF-8, `data: [DONE]` last and exactly once). Every stream is also fed through
// eventsource-parser, whose onError fails the check.

import http from 'node:http';
import { createParser } from 'eventsource-parser';
import { slow } from './harness.mjs';

// POST `body` and read the whole response. `onChunk(chunk, state)` may return 'abort' to destroy
// the connection (a client disconnect). Resolves {status, headers, chunks: [{bytes, at}], bytes,
// aborted, startedAt}.
export function streamRequest(server, urlPath, body, { onChunk, onResponse, timeoutMs = 120000 * slow, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const startedAt = Date.now();
    const req = http.request({
      host: '127.0.0.1', port: server.port, method: 'POST', path: urlPath, agent: false,
      headers: { 'content-type': 'application/json', 'content-length': payload.length, ...server.authHeaders(), ...headers },
    });
    const chunks = [];
    let response;
    let settled = false;
    const timer = setTimeout(() => { req.destroy(new Error(`stream ${urlPath}: not finished within ${timeoutMs} ms`)); }, timeoutMs);
    const done = (aborted) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        status: response?.statusCode, headers: response?.headers ?? {}, chunks,
        bytes: Buffer.concat(chunks.map((c) => c.bytes)), aborted, startedAt,
      });
    };
    req.on('error', (error) => {
      if (settled) return;
      if (error.code === 'ECONNRESET' && response && req.destroyed && req.llaisysAborted) return done(true);
      settled = true;
      clearTimeout(timer);
      reject(error);
    });
    req.on('response', (res) => {
      response = res;
      if (onResponse && onResponse(res) === 'abort') {
        req.llaisysAborted = true;
        req.destroy();
        return done(true);
      }
      res.on('data', (bytes) => {
        chunks.push({ bytes, at: Date.now() });
        if (onChunk && onChunk(bytes, { chunks }) === 'abort') {
          req.llaisysAborted = true;
          req.destroy();
          done(true);
        }
      });
      res.on('end', () => done(false));
      res.on('aborted', () => done(true));
      res.on('error', (error) => { if (!settled && !req.llaisysAborted) { settled = true; clearTimeout(timer); reject(error); } });
    });
    req.end(payload);
  });
}

// Strict framing check of a complete SSE body. Returns {problems: [...], events: [parsed JSON or
// '[DONE]'], comments: [text], errors: [error objects sent as events]}.
export function checkSseBody(bytes) {
  const problems = [];
  let text = '';
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    problems.push('the stream is not valid UTF-8');
    text = new TextDecoder('utf-8').decode(bytes);
  }
  // eventsource-parser: must report no error and must see the same events.
  const parsed = [];
  const parser = createParser({
    onEvent: (event) => parsed.push(event.data),
    onError: (error) => problems.push(`eventsource-parser: ${error.type}: ${error.message}`),
  });
  parser.feed(text);

  const events = [];
  const comments = [];
  const errors = [];
  if (!text.endsWith('\n\n')) problems.push(`the stream does not end with a blank line: ...${JSON.stringify(text.slice(-40))}`);
  const blocks = text.split('\n\n');
  blocks.pop(); // after the last "\n\n"
  let doneCount = 0;
  for (const [i, block] of blocks.entries()) {
    if (block.includes('\r')) problems.push(`block ${i} holds a carriage return: ${JSON.stringify(block)}`);
    if (block.includes('\n')) {
      problems.push(`block ${i} is not one line: ${JSON.stringify(block.slice(0, 200))}`);
      continue;
    }
    if (block.startsWith(':')) {
      comments.push(block.slice(1).trim());
      continue;
    }
    if (!block.startsWith('data: ')) {
      problems.push(`block ${i} is neither "data: ..." nor a comment: ${JSON.stringify(block.slice(0, 200))}`);
      continue;
    }
    const data = block.slice(6);
    if (doneCount > 0) problems.push(`an event after data: [DONE]: ${JSON.stringify(block.slice(0, 200))}`);
    if (data === '[DONE]') {
      ++doneCount;
      events.push('[DONE]');
      continue;
    }
    let json;
    try {
      json = JSON.parse(data);
    } catch {
      problems.push(`block ${i} is not JSON: ${JSON.stringify(data.slice(0, 200))}`);
      continue;
    }
    if (json && json.error) errors.push(json.error);
    events.push(json);
  }
  if (doneCount !== 1) problems.push(`data: [DONE] appears ${doneCount} times (expected exactly once, last)`);
  if (events[events.length - 1] !== '[DONE]') problems.push('the last event is not data: [DONE]');
  const dataEvents = events.length;
  if (parsed.length !== dataEvents) problems.push(`eventsource-parser saw ${parsed.length} events, the framing check ${dataEvents}`);
  return { problems, events, comments, errors, text };
}

// Checks the chunk semantics of a completed chat/completions stream with `n` choices; returns
// {problems, texts (per choice), finishReasons, id, usage, chunks}.
export function checkCompletionChunks(events, { n = 1, chat = true, includeUsage = false } = {}) {
  const problems = [];
  const chunks = events.filter((e) => e !== '[DONE]' && !e.error);
  const ids = new Set(chunks.map((c) => c.id));
  if (ids.size !== 1) problems.push(`${ids.size} distinct ids: ${[...ids].join(', ')}`);
  const texts = Array.from({ length: n }, () => '');
  const finishReasons = Array.from({ length: n }, () => []);
  const seenRole = Array.from({ length: n }, () => false);
  const seenChunk = Array.from({ length: n }, () => false);
  let usage;
  let usageChunks = 0;
  for (const [i, c] of chunks.entries()) {
    const object = chat ? 'chat.completion.chunk' : 'text_completion';
    if (c.object !== object) problems.push(`chunk ${i}: object ${JSON.stringify(c.object)}, expected ${object}`);
    if (!Array.isArray(c.choices)) {
      problems.push(`chunk ${i}: choices is not an array`);
      continue;
    }
    if (c.choices.length === 0) {
      if (!c.usage) problems.push(`chunk ${i}: empty choices without usage`);
      ++usageChunks;
      usage = c.usage;
      if (i !== chunks.length - 1) problems.push(`the usage chunk (${i}) is not the last chunk`);
      continue;
    }
    if (c.usage && includeUsage) problems.push(`chunk ${i}: usage on a chunk with choices`);
    for (const choice of c.choices) {
      const k = choice.index;
      if (!Number.isInteger(k) || k < 0 || k >= n) {
        problems.push(`chunk ${i}: choice index ${k} outside [0, ${n})`);
        continue;
      }
      if (finishReasons[k].length > 0) problems.push(`chunk ${i}: choice ${k} continues after its finish_reason`);
      if (chat) {
        const delta = choice.delta ?? {};
        if (!seenChunk[k]) {
          if (delta.role !== 'assistant') problems.push(`choice ${k}: first chunk has no delta.role "assistant" (${JSON.stringify(delta)})`);
          seenRole[k] = delta.role === 'assistant';
        } else if (delta.role !== undefined) {
          problems.push(`choice ${k}: delta.role repeated in chunk ${i}`);
        }
        if (typeof delta.content === 'string') texts[k] += delta.content;
      } else if (typeof choice.text === 'string') {
        texts[k] += choice.text;
      }
      seenChunk[k] = true;
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) finishReasons[k].push(choice.finish_reason);
    }
  }
  for (let k = 0; k < n; ++k) {
    if (!seenChunk[k]) problems.push(`choice ${k}: no chunk`);
    if (finishReasons[k].length !== 1) problems.push(`choice ${k}: ${finishReasons[k].length} finish_reasons (${finishReasons[k].join(', ')})`);
  }
  if (includeUsage && usageChunks !== 1) problems.push(`${usageChunks} usage chunks with empty choices (expected 1)`);
  if (!includeUsage && usageChunks !== 0) problems.push(`${usageChunks} usage chunks without stream_options.include_usage`);
  return { problems, texts, finishReasons: finishReasons.map((r) => r[0]), id: [...ids][0], usage, chunks };
}
