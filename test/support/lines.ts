/**
 * A 'data' listener that calls `line` with each complete line of one stream; an unfinished line waits for the
 * chunk that ends it. One per stream: a chunk of another stream must not split a line of this one.
 */
export function lineSplitter(line: (text: string) => void): (chunk: Buffer) => void {
  let partial = '';
  return (chunk) => {
    partial += chunk.toString('utf8');
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) line(l);
  };
}
