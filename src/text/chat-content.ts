import { z } from 'zod';

/**
 * A chat message's `content` as the OpenAI API allows it: a string, or an array of parts. Text parts
 * (`{type: "text", text}`) are joined with newlines, as vLLM joins them, into the one string the chat
 * template renders; any other part type is refused with an issue naming it (`content.N.type`), since
 * no engine here takes images or audio. `null` (an assistant turn with only tool calls) is empty text.
 */
export const chatContentSchema = z.unknown().transform((content, ctx): string => {
  if (typeof content === 'string') return content;
  if (content === null) return '';
  if (!Array.isArray(content)) {
    ctx.issues.push({
      code: 'custom',
      input: content,
      message: 'expected a string or an array of content parts',
    });
    return z.NEVER;
  }
  const texts: string[] = [];
  for (const [i, part] of content.entries()) {
    const type = (part as { type?: unknown } | null)?.type;
    if (type !== 'text') {
      ctx.issues.push({
        code: 'custom',
        input: part,
        path: typeof type === 'string' ? [i, 'type'] : [i],
        message:
          typeof type === 'string'
            ? `unsupported content part type '${type}'; only 'text' parts are supported`
            : "expected a content part ({type: 'text', text})",
      });
      return z.NEVER;
    }
    const text = (part as { text?: unknown }).text;
    if (typeof text !== 'string') {
      ctx.issues.push({ code: 'custom', input: part, path: [i, 'text'], message: 'expected a string' });
      return z.NEVER;
    }
    texts.push(text);
  }
  return texts.join('\n');
});

/** A chat message: role and content (made a string); other fields (name, tool calls) are kept. */
export const chatMessageSchema = z.looseObject({ role: z.string().min(1), content: chatContentSchema });

/** OpenAI's `stop`: one string or up to four. */
export const stopSchema = z.union([z.string(), z.array(z.string()).max(4)]).nullish();

/** The stop strings of a request (none for null, an empty string being no stop string). */
export function stopStrings(stop: string | readonly string[] | null | undefined): string[] {
  if (stop === null || stop === undefined) return [];
  return (typeof stop === 'string' ? [stop] : [...stop]).filter((s) => s.length > 0);
}
