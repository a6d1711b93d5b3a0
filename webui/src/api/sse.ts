// A server-sent events parser (the WHATWG "text/event-stream" rules), fed decoded text in pieces of
// any size. Lines may end in \n, \r\n or \r, also split across pieces; comment lines (": keep-alive")
// are ignored; an event is dispatched at a blank line, its data lines joined with "\n".

export interface SseEvent {
  event: string; // "message" unless an "event:" field named it
  data: string;
}

export class SseParser {
  private buffer = "";
  private dataLines: string[] = [];
  private eventType = "";
  private sawCarriageReturn = false;

  // Parses `text` and returns the events completed by it.
  push(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch === 0x0a && this.sawCarriageReturn && i === start && this.buffer.length === 0) {
        // The \n of a \r\n whose \r ended the previous line.
        this.sawCarriageReturn = false;
        start = i + 1;
        continue;
      }
      this.sawCarriageReturn = false;
      if (ch === 0x0a || ch === 0x0d) {
        const line = this.buffer + text.slice(start, i);
        this.buffer = "";
        this.sawCarriageReturn = ch === 0x0d;
        const event = this.processLine(line);
        if (event !== null) events.push(event);
        start = i + 1;
      }
    }
    this.buffer += text.slice(start);
    return events;
  }

  // Call at end of input: an unterminated last line is processed; an event without its blank line
  // is not dispatched, as the standard says.
  finish(): SseEvent[] {
    if (this.buffer.length > 0) {
      this.processLine(this.buffer);
      this.buffer = "";
    }
    this.dataLines = [];
    this.eventType = "";
    return [];
  }

  private processLine(line: string): SseEvent | null {
    if (line.length === 0) {
      if (this.dataLines.length === 0) {
        this.eventType = "";
        return null;
      }
      const event = { event: this.eventType || "message", data: this.dataLines.join("\n") };
      this.dataLines = [];
      this.eventType = "";
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.dataLines.push(value);
    else if (field === "event") this.eventType = value;
    return null;
  }
}
