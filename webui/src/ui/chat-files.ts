// Export to a downloaded file and import from a picked one; the format and its validation are in
// state/transfer.ts.
import { exportFileName, exportFileText, parseExportFile, type ImportParse } from "../state/transfer";
import type { AppState } from "../state/types";
import { downloadFile } from "./dom";

export interface TransferMessage {
  kind: "ok" | "error";
  text: string;
}

// Downloads one conversation (by id) or every conversation that has messages (null).
export function exportToFile(state: AppState, id: string | null): TransferMessage {
  const one = id === null ? null : (state.conversations.find((c) => c.id === id) ?? null);
  const chats = one !== null ? [one] : state.conversations.filter((c) => c.messages.length > 0);
  if (chats.length === 0) return { kind: "error", text: "There are no chats with messages to export." };
  downloadFile(exportFileName(one), exportFileText(chats), "application/json");
  return { kind: "ok", text: `Exported ${chats.length} ${chats.length === 1 ? "chat" : "chats"}.` };
}

// Reads and validates an export file; an error names the file and says that nothing was imported.
export async function readExportFile(file: File): Promise<ImportParse> {
  let parsed: ImportParse;
  try {
    parsed = parseExportFile(await file.text());
  } catch (e) {
    parsed = { ok: false, error: `The file could not be read (${(e as Error).message}).` };
  }
  return parsed.ok ? parsed : { ok: false, error: `Nothing was imported from "${file.name}": ${parsed.error}` };
}
