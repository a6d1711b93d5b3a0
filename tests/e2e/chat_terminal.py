"""llaisys-offline chat on a real pseudo-terminal: tmux types the keys and reads the screen.

  chat_terminal.py MKMODEL OFFLINE WORKDIR

On the tiny Qwen2 (greedy): three turns, /stats after each shows cached tokens from the second turn
on and a prefill of only the new tokens (up to the cache's 16-token block granularity); the answers
equal the engine's for the same conversation; /save, then /load in a new session, and the next
answer equals what a fresh run of the saved conversation gives (generate over its messages, and the
piped chat with --load).
On the mock (slowed to 100 ms a step, block size 1 so the prefill bound is exact): Ctrl-C in the
middle of an answer brings the prompt back at once, the next turns work and reuse the cache,
Ctrl-C at the prompt abandons the line, Up recalls history, Ctrl-D quits with status 0.
Control characters in an answer (a byte-token mock) show as U+FFFD on the terminal.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_models import Reference, make_mock, make_tiny_qwen2, run  # noqa: E402

mkmodel, offline, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
tiny = make_tiny_qwen2(mkmodel, work)
mock = make_mock(work, tiny, delay_ms_per_step=100)
STATS = re.compile(r"^last turn: +prompt (\d+) tokens = (\d+) cached \+ (\d+) prefilled \((\d+) new\), "
                   r"answer (\d+) tokens \((\w+)\)$", re.M)
SOCKET = f"llaisys-chat-test-{os.getpid()}"  # a private tmux server, never the user's
ENV = dict(os.environ, LANG="C.UTF-8", TERM=os.environ.get("TERM") or "xterm")


def tmux(*args, check=True):
    return subprocess.run(["tmux", "-L", SOCKET, "-f", "/dev/null", *args], capture_output=True, text=True,
                          env=ENV, check=check)


class Chat:
    """One chat process in a tmux pane; its exit status is written to WORKDIR/NAME.status."""

    def __init__(self, name, *args):
        self.name = name
        self.status_file = os.path.join(work, name + ".status")
        command = " ".join(f"'{a}'" for a in [offline, "chat", *args])
        # The scrollback limit applies to windows created after it is set: set it first.
        tmux("start-server", ";", "set-option", "-g", "history-limit", "20000", ";",
             "new-session", "-d", "-s", name, "-x", "200", "-y", "50",
             f"{command}; echo $? > '{self.status_file}'; sleep 600")
        self.wait_prompt(count=1)

    def screen(self):
        return tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.name).stdout

    def prompts(self):
        return [line for line in self.screen().split("\n") if line.startswith("> ") or line == ">"]

    def wait(self, predicate, what, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.screen()):
                return
            time.sleep(0.05)
        raise AssertionError(f"{self.name}: timed out waiting for {what}; screen:\n{self.screen()}")

    def wait_prompt(self, count=None):
        """Until an empty prompt is the last line (and, with count, the count-th prompt)."""
        def ready(screen):
            lines = [line for line in screen.rstrip("\n").split("\n") if line.strip()]
            prompts = [line for line in screen.split("\n") if line.startswith("> ") or line == ">"]
            return bool(lines) and lines[-1].rstrip() == ">" and (count is None or len(prompts) >= count)
        self.wait(ready, f"prompt {count}")

    def send(self, line):
        before = len(self.prompts())
        tmux("send-keys", "-t", self.name, "-l", line)
        tmux("send-keys", "-t", self.name, "Enter")
        self.wait_prompt(count=before + 1)

    def keys(self, *keys):
        tmux("send-keys", "-t", self.name, *keys)

    def stats(self):
        self.send("/stats")
        found = STATS.findall(self.screen())
        assert found, f"/stats printed nothing readable:\n{self.screen()}"
        prompt, cached, prefilled, new, answer, finish = found[-1]
        return {"prompt": int(prompt), "cached": int(cached), "prefilled": int(prefilled), "new": int(new),
                "answer": int(answer), "finish": finish}

    def quit(self):
        self.keys("C-d")
        deadline = time.monotonic() + 30
        while not os.path.exists(self.status_file) or not open(self.status_file).read().strip():
            assert time.monotonic() < deadline, f"{self.name}: Ctrl-D did not quit:\n{self.screen()}"
            time.sleep(0.05)
        status = int(open(self.status_file).read())
        assert status == 0, f"{self.name}: exit status {status}:\n{self.screen()}"
        tmux("kill-session", "-t", self.name)


def load(path):
    with open(path) as f:
        return json.load(f)["messages"]


def check_stats(name, turn, stats, block_size):
    assert stats["cached"] > 0, f"{name}: turn {turn} used no cached tokens: {stats}"
    assert stats["prefilled"] == stats["prompt"] - stats["cached"]
    # Only the new tokens are computed, but for the cache's block granularity.
    assert 0 <= stats["prefilled"] - stats["new"] < block_size, f"{name}: turn {turn} recomputed old tokens: {stats}"


try:
    # --- tiny Qwen2: three turns, /stats, /save; then /load and one more turn -------------------------
    max_tokens = 16
    users = ["hi", "more", "tell me a story"]
    chat = Chat("tiny", "--model", tiny, "--temperature", "0", "--max-tokens", str(max_tokens))
    for turn, user in enumerate(users, start=1):
        chat.send(user)
        stats = chat.stats()
        print(f"tiny-qwen2 turn {turn}: {stats}")
        assert stats["answer"] == max_tokens and stats["finish"] in ("length", "stop"), stats
        if turn > 1:
            check_stats("tiny-qwen2", turn, stats, block_size=16)
    saved = os.path.join(work, "tiny.json")
    chat.send(f"/save {saved}")
    assert f"[saved 6 messages to {saved}]" in chat.screen()
    chat.quit()
    messages = load(saved)
    by_ids, _, _ = Reference(offline, tiny, max_tokens).conversation(users)
    assert [m["content"] for m in messages if m["role"] == "assistant"] == by_ids, \
        "the terminal chat's answers differ from the engine's for the same conversation"

    chat = Chat("tiny-loaded", "--model", tiny, "--temperature", "0", "--max-tokens", str(max_tokens))
    chat.send(f"/load {saved}")
    assert f"[loaded 6 messages from {saved}]" in chat.screen()
    chat.send("and then?")
    resaved = os.path.join(work, "tiny-loaded.json")
    chat.send(f"/save {resaved}")
    chat.quit()
    restored = load(resaved)
    assert restored[:6] == messages, "/load did not restore the conversation"
    assert restored[6] == {"role": "user", "content": "and then?"}
    fresh = Reference(offline, tiny, max_tokens).generate_messages(messages + [restored[6]])["text"]
    assert restored[7] == {"role": "assistant", "content": fresh}, \
        f"after /load: {restored[7]['content']!r}, a fresh run of the conversation: {fresh!r}"
    piped = run([offline, "chat", "--model", tiny, "--temperature", "0", "--max-tokens", str(max_tokens),
                 "--load", saved], "and then?\n").stdout
    assert piped == fresh + "\n", (piped, fresh)
    print("tiny-qwen2: /save + /load + one turn equals a fresh run of the conversation")

    # --- mock, slowed: Ctrl-C in the middle of an answer --------------------------------------------
    max_tokens = 30  # 3 s at 100 ms a step
    chat = Chat("mock", "--model", mock, "--temperature", "0", "--max-tokens", str(max_tokens), "--block-size", "1")
    before = len(chat.prompts())
    chat.keys("-l", "tell me everything")
    chat.keys("Enter")
    chat.wait(lambda s: re.search(r"^> tell me everything\n.+", s, re.M) is not None, "the answer to start")
    time.sleep(0.3)
    stopped_at = time.monotonic()
    chat.keys("C-c")
    chat.wait_prompt(count=before + 1)
    latency = time.monotonic() - stopped_at
    assert latency < 2.0, f"the prompt took {latency:.2f} s to come back after Ctrl-C"
    assert "[answer stopped; the conversation keeps what was said]" in chat.screen()
    stats = chat.stats()
    assert stats["finish"] == "abort" and 0 < stats["answer"] < max_tokens, stats
    print(f"mock: Ctrl-C stopped the answer after {stats['answer']} tokens, prompt back in {latency:.2f} s")
    for turn, user in ((2, "next question"), (3, "third question")):
        chat.send(user)
        stats = chat.stats()
        print(f"mock turn {turn}: {stats}")
        assert stats["finish"] == "length" and stats["answer"] == max_tokens, stats
        check_stats("mock", turn, stats, block_size=1)
    # Ctrl-C at the prompt abandons the line; Up brings back history.
    chat.keys("-l", "abandoned line")
    chat.keys("C-c")
    chat.wait_prompt()
    chat.keys("Up", "Up")
    chat.wait(lambda s: s.rstrip().endswith("> third question"), "Up, Up to recall the message before /stats")
    chat.keys("C-u")
    saved = os.path.join(work, "mock.json")
    chat.send(f"/save {saved}")
    chat.quit()
    messages = load(saved)
    assert [m["content"] for m in messages if m["role"] == "user"] == \
        ["tell me everything", "next question", "third question"], messages
    full = Reference(offline, mock, max_tokens).generate_messages(messages[:1])["text"]
    assert messages[1]["content"] and full.startswith(messages[1]["content"]) and messages[1]["content"] != full, \
        "the stopped answer should be the beginning of the full one"

    # --- control characters in an answer reach the terminal as U+FFFD, raw in the saved JSON -----
    raw = make_mock(work, tiny, name="mock-bytes", text_vocab_size=256)  # byte tokens: controls too
    chat = Chat("bytes", "--model", raw, "--temperature", "0", "--max-tokens", "64")
    chat.send("x")
    saved = os.path.join(work, "bytes.json")
    chat.send(f"/save {saved}")
    screen = chat.screen()
    chat.quit()
    answer = load(saved)[1]["content"]
    controls = [c for c in answer if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F]
    assert controls, "the byte-token mock should have produced control characters"
    shown = re.search(r"^> x\n(.*?)\n> /save", screen, re.S | re.M).group(1)
    expected = "".join("\ufffd" if c in controls else c for c in answer)
    # The printable ASCII of the answer is all on the screen, in order (an escape sequence run by
    # the terminal would have eaten some), and every control character left a U+FFFD. (Other
    # characters are left out of the comparison: tmux drops or merges unassigned and combining ones.)
    def ascii_of(text):
        return "".join(c for c in text if "!" <= c <= "~")
    assert ascii_of(shown) == ascii_of(expected), f"screen {shown!r} != {expected!r}"
    assert shown.count("\ufffd") >= expected.count("\ufffd"), f"screen {shown!r} != {expected!r}"
    print(f"control characters: {len(controls)} shown as U+FFFD on the terminal")
    print("chat terminal e2e: ok")
finally:
    tmux("kill-server", check=False)
