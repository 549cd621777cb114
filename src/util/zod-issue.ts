import type { z } from 'zod';

/** The first problem zod found, as the field it names (null: the value itself) and one line. */
export function firstIssue(error: z.ZodError): {
  param: string | null;
  message: string;
  issue: z.core.$ZodIssue;
} {
  const issue = error.issues[0]!;
  const param = issue.path.length > 0 ? issue.path.map(String).join('.') : null;
  return { param, message: param === null ? issue.message : `${param}: ${issue.message}`, issue };
}
