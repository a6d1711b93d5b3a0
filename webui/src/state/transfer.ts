// Export and import of conversations as a JSON file. Pure: no DOM (ui/chat-files.ts does the download
// and the file picker), unit-tested in unit-tests/transfer.test.ts.
//
// The file: {"format": "llaisys-webui-chats", "version": 1, "exportedAt": ISO date,
// "conversations": [...]}, each conversation exactly as localStorage keeps it (settings and
// messages included, the API key never). An import is all or nothing: every conversation and every
// message in the file must pass storage.ts's validation, or the whole file is refused and the
// state is left as it was.
import { newId } from "./conversations";
import { isRecord, readConversation } from "./storage";
import type { AppState, Conversation } from "./types";

export const EXPORT_FORMAT = "llaisys-webui-chats";
export const EXPORT_VERSION = 1;

export function exportFileText(conversations: readonly Conversation[], now = new Date()): string {
  return `${JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: now.toISOString(), conversations }, null, 2)}\n`;
}

// "llaisys-chats-2024-05-01.json", or "llaisys-chat-<title>.json" for one conversation.
export function exportFileName(conversation: Conversation | null, now = new Date()): string {
  if (conversation === null) return `llaisys-chats-${now.toISOString().slice(0, 10)}.json`;
  const slug = conversation.title.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-+|-+$/g, "").slice(0, 40);
  return `llaisys-chat-${slug.length > 0 ? slug : "untitled"}.json`;
}

export type ImportParse = { ok: true; conversations: Conversation[] } | { ok: false; error: string };

// Reads an export file. Refuses (with the reason, for the user) anything that is not one, or that
// holds a conversation or message the stored-state validation would drop.
export function parseExportFile(text: string): ImportParse {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `The file is not valid JSON (${(e as Error).message}).` };
  }
  if (!isRecord(raw) || raw.format !== EXPORT_FORMAT) {
    return { ok: false, error: "The file is not a llaisys chat export (its \"format\" is not \"llaisys-webui-chats\")." };
  }
  if (raw.version !== EXPORT_VERSION) {
    return { ok: false, error: `The file is version ${JSON.stringify(raw.version)} of the export format; this page reads version ${EXPORT_VERSION}.` };
  }
  if (!Array.isArray(raw.conversations)) return { ok: false, error: "The file has no \"conversations\" list." };
  const conversations: Conversation[] = [];
  for (const [index, item] of raw.conversations.entries()) {
    const conversation = readConversation(item);
    if (conversation === null) return { ok: false, error: `Chat ${index + 1} of the file is not a valid chat (no id or no message list).` };
    const dropped = (item as { messages: unknown[] }).messages.length - conversation.messages.length;
    if (dropped > 0) {
      return { ok: false, error: `Chat ${index + 1} of the file ("${conversation.title}") has ${dropped} invalid ${dropped === 1 ? "message" : "messages"}.` };
    }
    conversations.push(conversation);
  }
  if (conversations.length === 0) return { ok: false, error: "The file holds no chats." };
  return { ok: true, conversations };
}

export interface ImportResult {
  added: number; // new ids, added as they are
  copies: number; // ids already here with other content: added under a new id, titled "... (copy)"
  unchanged: number; // already here exactly as in the file: left alone
  firstId: string | null; // the first conversation of the file that was added, if any
}

// Adds imported conversations to the state; nothing already there is changed or removed. The list
// stays ordered by last update, newest first.
export function mergeImported(state: AppState, imported: readonly Conversation[]): ImportResult {
  const result: ImportResult = { added: 0, copies: 0, unchanged: 0, firstId: null };
  for (const conversation of imported) {
    const existing = state.conversations.find((c) => c.id === conversation.id);
    let incoming = conversation;
    if (existing !== undefined) {
      if (sameConversation(existing, conversation)) {
        result.unchanged += 1;
        continue;
      }
      incoming = { ...conversation, id: newId(), title: `${conversation.title} (copy)`, titleEdited: true };
      result.copies += 1;
    } else {
      result.added += 1;
    }
    state.conversations.push(incoming);
    result.firstId ??= incoming.id;
  }
  state.conversations.sort((a, b) => b.updatedAt - a.updatedAt);
  return result;
}

// Equal as stored: both through the same validation, so the order of fields does not matter.
function sameConversation(a: Conversation, b: Conversation): boolean {
  const stored = (c: Conversation): string => JSON.stringify(readConversation(JSON.parse(JSON.stringify(c))));
  return stored(a) === stored(b);
}

// What an import did, in words.
export function describeImport(result: ImportResult): string {
  const parts: string[] = [];
  const chats = (n: number): string => `${n} ${n === 1 ? "chat" : "chats"}`;
  if (result.added > 0) parts.push(`imported ${chats(result.added)}`);
  if (result.copies > 0) parts.push(`added ${chats(result.copies)} as copies (their ids were taken)`);
  if (result.unchanged > 0) parts.push(`${chats(result.unchanged)} already here`);
  const text = parts.join(", ");
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}
