// What the launcher (run.sh) tells the specs, read once here.
import path from "node:path";

function required(name) {
  const value = process.env[name];
  if (value === undefined || value.length === 0) {
    throw new Error(`${name} is not set: run the browser tests through tests/browser/run.sh`);
  }
  return value;
}

export const BASE_URL = required("LLAISYS_SERVER_URL").replace(/\/+$/, "") + "/";
export const API_KEY = process.env.LLAISYS_API_KEY ?? "";
export const QWEN2_MODEL = required("LLAISYS_TEST_QWEN2_MODEL");
export const MOCK_MODEL = required("LLAISYS_TEST_MOCK_MODEL");
export const ARTIFACTS_DIR = path.resolve(process.env.LLAISYS_TEST_ARTIFACTS ?? "test-artifacts/browser");
// The mock model's context length as the launcher configured it (for the context-length test).
export const MOCK_CONTEXT_TOKENS = Number(process.env.LLAISYS_TEST_MOCK_CONTEXT ?? "1024");
// How many requests the server takes at once (running + queued) before answering 429/503.
export const SERVER_CAPACITY = Number(process.env.LLAISYS_TEST_CAPACITY ?? "4");
// The prompt the mock model answers with a scripted "<think>...</think>" reply (run.sh sets it up).
export const THINK_PROMPT = process.env.LLAISYS_TEST_THINK_PROMPT ?? "Think it through: what is the answer to everything?";
