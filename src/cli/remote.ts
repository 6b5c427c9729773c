import { type Command, Option } from "commander";
import { parseEnv } from "../config/env.js";
import { DomainError } from "../errors.js";

/** Where a remote command talks to: --url/--key, else VOXGATE_URL/VOXGATE_API_KEY (read by the one env module). */
export interface RemoteTarget {
  url: string;
  key: string | undefined;
}

export interface RemoteOptions {
  url?: string;
  key?: string;
}

/** Adds --url and --key to a command that talks to a running server. */
export function withServerOptions(command: Command): Command {
  return command
    .addOption(new Option("--url <url>", "the Voxgate server (default: VOXGATE_URL)"))
    .addOption(new Option("--key <key>", "API key (default: VOXGATE_API_KEY)"));
}

export function remoteTarget(o: RemoteOptions): RemoteTarget {
  const env = parseEnv();
  const url = o.url ?? env.VOXGATE_URL;
  if (!url) throw new DomainError("bad_request", "no server to talk to: pass --url or set VOXGATE_URL (e.g. http://127.0.0.1:8080)");
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new DomainError("bad_request", `--url must be an http(s) URL, not ${JSON.stringify(url)}`);
  return { url, key: o.key ?? env.VOXGATE_API_KEY };
}
