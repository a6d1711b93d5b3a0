// Canned chat answers: page.route() fulfils the page's POST v1/chat/completions with a fixed
// event stream, so a spec can put any text (hostile, code, math, reasoning) in front of the UI
// without a model that would say it. The stream has the server's shape: role chunk, one chunk per
// delta, a finish chunk, the usage chunk, [DONE].

// deltas: [{ content } | { reasoning_content }, ...]; usage: the usage object of the last chunk.
export function cannedStream(deltas, usage) {
  const id = "chatcmpl-canned";
  const chunk = (delta, finishReason = null) => ({
    id,
    object: "chat.completion.chunk",
    created: 0,
    model: "canned",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const events = [chunk({ role: "assistant", content: "" }), ...deltas.map((d) => chunk(d)), chunk({}, "stop")];
  events.push({ id, object: "chat.completion.chunk", created: 0, model: "canned", choices: [], usage });
  return `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")}data: [DONE]\n\n`;
}

// Splits text into pieces of a few characters, as tokens would arrive.
export function pieces(text, size = 7) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

// Answers every chat request of the page with `answer` ({ reasoning?, content, usage? }) until unroute.
export async function cannedAnswers(page, answer) {
  const deltas = [
    ...pieces(answer.reasoning ?? "").map((p) => ({ reasoning_content: p })),
    ...pieces(answer.content).map((p) => ({ content: p })),
  ];
  const usage = answer.usage ?? { prompt_tokens: 12, completion_tokens: deltas.length, total_tokens: 12 + deltas.length };
  await page.route("**/v1/chat/completions", (route) =>
    route.fulfill({ status: 200, headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" }, body: cannedStream(deltas, usage) }),
  );
}
