// JSON Pointer (RFC 6901) helpers shared by the structured-output checks.

export function escapePointer(s) {
  return String(s).replace(/~/g, "~0").replace(/\//g, "~1");
}
export function unescapePointer(s) {
  return s.replace(/~1/g, "/").replace(/~0/g, "~");
}
export function pointerToFragment(pointer) {
  return pointer.split("/").map((seg, i) => (i === 0 ? seg : encodeURIComponent(unescapePointer(seg).replace(/~/g, "~0").replace(/\//g, "~1")))).join("/");
}

export function getByPointer(root, pointer) {
  if (pointer === "") return root;
  let cur = root;
  for (const raw of pointer.split("/").slice(1)) {
    const seg = unescapePointer(raw);
    if (cur === null || typeof cur !== "object" || !(seg in cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}
