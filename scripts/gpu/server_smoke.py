#!/usr/bin/env python3
"""A smoke run of llaisys-server on the GPU (run-on-gpu.sh's `server` phase): the machines there have
no node, so the e2e suites (tests/e2e/server, node's test runner and the openai SDK) do not run; this
drives a server started with --device cuda over plain HTTP (the standard library alone).

Checks, each an assertion with a message:
  - 32 concurrent chat completions (half streamed, mixed max_tokens, greedy and seeded sampling)
    all finish with "stop" or "length", within max_tokens, with usage counted as the stream said;
  - a greedy request gives the same text twice when alone (a decode pass replayed from a CUDA graph
    against the one that recorded it);
  - a client that drops a stream mid-way does not stop the server: the next request is served;
  - malformed JSON gets a 400 naming the problem, and the server still answers /health.

  server_smoke.py --url http://127.0.0.1:PORT --model NAME
"""
import argparse
import concurrent.futures
import http.client
import json
import random
import sys
import time
import urllib.parse


def connect(url, timeout=120):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


def post(url, path, body, raw=None):
    c = connect(url)
    payload = raw if raw is not None else json.dumps(body)
    c.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def chat(url, model, prompt, max_tokens, stream, temperature, seed):
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": temperature, "stream": stream}
    if seed is not None:
        body["seed"] = seed
    if stream:
        body["stream_options"] = {"include_usage": True}
        c = connect(url)
        c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, f"stream status {r.status}: {r.read()[:300]!r}"
        text, finish, usage, chunks = "", None, None, 0
        for line in r:
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            if line == b"data: [DONE]":
                break
            event = json.loads(line[6:])
            if event.get("usage"):
                usage = event["usage"]
            for choice in event.get("choices", []):
                text += choice.get("delta", {}).get("content") or ""
                finish = choice.get("finish_reason") or finish
                chunks += 1
        c.close()
        return text, finish, usage
    status, data = post(url, "/v1/chat/completions", body)
    assert status == 200, f"status {status}: {data[:300]!r}"
    reply = json.loads(data)
    choice = reply["choices"][0]
    return choice["message"]["content"] or "", choice["finish_reason"], reply["usage"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()

    deadline = time.time() + 120
    while True:
        try:
            c = connect(a.url, timeout=2)
            c.request("GET", "/ready")
            if c.getresponse().status == 200:
                break
        except OSError:
            pass
        assert time.time() < deadline, "server not ready within 120 s"
        time.sleep(0.2)

    rng = random.Random(0)
    jobs = []
    for i in range(32):
        jobs.append(dict(prompt=f"Tell me story number {i} about a {rng.choice(['cat', 'ship', 'tree', 'robot'])}.",
                         max_tokens=rng.randint(4, 96), stream=i % 2 == 0,
                         temperature=0.0 if i % 3 == 0 else 0.8, seed=None if i % 3 == 0 else 1000 + i))
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(lambda j: chat(a.url, a.model, **j), jobs))
    secs = time.time() - t0
    generated = 0
    for j, (text, finish, usage) in zip(jobs, results):
        assert finish in ("stop", "length"), f"finish_reason {finish!r} for {j}"
        assert usage is not None, f"no usage for {j}"
        assert 1 <= usage["completion_tokens"] <= j["max_tokens"], f"usage {usage} for {j}"
        assert finish != "length" or usage["completion_tokens"] == j["max_tokens"], f"length stop at {usage} for {j}"
        generated += usage["completion_tokens"]
    print(f"32 concurrent requests: {generated} tokens in {secs:.2f} s, all finished within max_tokens")

    alone = [chat(a.url, a.model, "Say something about GPUs.", 48, False, 0.0, None)[0] for _ in range(2)]
    assert alone[0] == alone[1], f"greedy request alone gave two texts: {alone!r}"
    print(f"greedy alone twice: same {len(alone[0])} characters")

    # A client that reads two chunks of a stream and hangs up.
    c = connect(a.url)
    c.request("POST", "/v1/chat/completions", headers={"Content-Type": "application/json"},
              body=json.dumps({"model": a.model, "messages": [{"role": "user", "content": "count"}],
                               "max_tokens": 200, "stream": True}))
    r = c.getresponse()
    assert r.status == 200
    r.readline()
    r.readline()
    c.sock.close()
    text, finish, _ = chat(a.url, a.model, "After the hang-up.", 16, False, 0.0, None)
    assert finish in ("stop", "length"), finish
    print("a dropped stream: the next request served")

    status, data = post(a.url, "/v1/chat/completions", None, raw=b'{"model": "x", "messages": [')
    assert status == 400, f"malformed JSON: status {status}"
    c = connect(a.url)
    c.request("GET", "/health")
    assert c.getresponse().status == 200
    print(f"malformed JSON: 400 ({json.loads(data)['error']['message'][:80]}); /health still 200")
    print("server smoke: PASSED")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"server smoke: FAILED: {e}")
        sys.exit(1)
