import type { Command } from "commander";

/** Prints a value as indented JSON and a newline: every command's JSON output. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Adds `--json` to a command that otherwise prints its answer as text (printAnswer prints it). */
export function withJsonOption(command: Command, description: string): Command {
  return command.option("--json", description);
}

/** Prints a command's answer: JSON under --json, else its text. */
export function printAnswer<T>(o: { json?: boolean }, answer: T, text: (answer: T) => string): void {
  if (o.json) printJson(answer);
  else process.stdout.write(text(answer));
}
