/** One non-empty line of a text file, with its 1-based line number for error messages. */
export interface NumberedLine {
  readonly text: string;
  readonly lineNumber: number;
}

/**
 * The non-blank lines of a text, lazily: traces are read whole but never split into one big array,
 * so that taking the first few requests of a large file stays cheap. Handles LF and CRLF endings.
 */
export function* numberedLines(text: string): Generator<NumberedLine> {
  let lineNumber = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    lineNumber++;
    const line = text.slice(start, text.charCodeAt(end - 1) === 13 ? end - 1 : end);
    if (line.trim() !== '') yield { text: line, lineNumber };
    start = end + 1;
  }
}
