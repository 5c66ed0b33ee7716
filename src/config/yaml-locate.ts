// Maps a key path of the parsed config back to the line it was written on, so every problem can
// be reported as file:line.
import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node, type Pair } from 'yaml';

interface Located {
  /** Deepest node found on the path (the value at `path` when `complete`). */
  node: Node | null;
  /** The map entry holding the deepest node found, for the key's line. */
  pair: Pair | undefined;
  complete: boolean;
}

function findPair(map: Node, key: string | number): Pair | undefined {
  if (!isMap(map)) return undefined;
  return map.items.find((p) => isPair(p) && (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(key)) as Pair | undefined;
}

export function locate(doc: Document, path: readonly PropertyKey[]): Located {
  let node = doc.contents as Node | null;
  let pair: Pair | undefined;
  for (const seg of path) {
    if (node === null) return { node, pair, complete: false };
    if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg] as Node | undefined;
      if (!item) return { node, pair, complete: false };
      node = item;
      continue;
    }
    const found = findPair(node, String(seg));
    if (!found) return { node, pair, complete: false };
    pair = found;
    node = (found.value as Node | null) ?? null;
  }
  return { node, pair, complete: true };
}

function lineOf(counter: LineCounter, node: { range?: [number, number, number] | null } | null | undefined): number | undefined {
  const start = node?.range?.[0];
  return start === undefined ? undefined : counter.linePos(start).line;
}

/** Line of the value at `path`; else of its key; else of the nearest enclosing key that exists. */
export function valueLine(doc: Document, counter: LineCounter, path: readonly PropertyKey[]): number | undefined {
  const { node, pair, complete } = locate(doc, path);
  if (complete) {
    const isEmptyValue = !node || (isScalar(node) && node.value === null && node.source === '');
    return (isEmptyValue ? undefined : lineOf(counter, node)) ?? lineOf(counter, pair?.key as Node | undefined);
  }
  return lineOf(counter, pair?.key as Node | undefined);
}

/** Line of the key `key` inside the mapping at `path` (for unknown keys). */
export function keyLine(doc: Document, counter: LineCounter, path: readonly PropertyKey[], key: string): number | undefined {
  const parent = path.length === 0 ? (doc.contents as Node | null) : locate(doc, path).node;
  const pair = parent ? findPair(parent, key) : undefined;
  return lineOf(counter, pair?.key as Node | undefined) ?? valueLine(doc, counter, path);
}
