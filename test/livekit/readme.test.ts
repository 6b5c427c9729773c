import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { voxgateGateway } from "../../src/livekit/index.js";

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const README = readFileSync(root("README.md"), "utf8");
const section = README.slice(README.indexOf("## Voice agents"), README.indexOf("## Documentation"));
const block = (lang: string) => {
  const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!m?.[1]) throw new Error(`README's Voice agents section has no ${lang} block`);
  return m[1];
};
const AGENT = root("examples/livekit-agent/agent.ts");

describe("README: Voice agents", () => {
  it("shows the example agent's code, byte for byte", () => {
    expect(block("ts")).toBe(readFileSync(AGENT, "utf8"));
  });

  it("the example compiles against @livekit/agents 1.9 and voxgate/livekit (this source)", () => {
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2023,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
      // The example depends on the published package; here it resolves to this checkout's source.
      paths: { "voxgate/livekit": [root("src/livekit/index.ts")] },
      allowImportingTsExtensions: false,
    };
    const host = ts.createCompilerHost(options);
    // Resolve packages from the repository's node_modules, as `npm install` in the example would.
    const program = ts.createProgram({ rootNames: [AGENT], options: { ...options, typeRoots: [root("node_modules/@types")] }, host });
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === AGENT || d.file === undefined);
    const text = diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(text).toEqual([]);
  }, 120_000);

  it("the Python base URLs are the prefixes voxgateGateway gives the Node plugins", () => {
    const py = block("python");
    const base = /base = f"(http:\/\/localhost:8080\/p\/support\/s\/)\{ctx\.job\.id\}"/.exec(py)?.[1];
    expect(base).toBe("http://localhost:8080/p/support/s/");
    const gw = voxgateGateway({ url: "http://localhost:8080", apiKey: "k", project: "support", sessionId: "JOB" });
    const at = (suffix: string) => `${base}JOB${suffix}`;
    expect(py).toContain('base_url=f"{base}/openai/v1"');
    expect(gw.openai().baseURL).toBe(at("/openai/v1"));
    expect(py).toContain('base_url=f"{base}/elevenlabs/v1"');
    expect(gw.elevenlabs().baseURL).toBe(at("/elevenlabs/v1"));
    // Python's Deepgram plugin takes the full listen URL; Node's adds /v1/listen to its base.
    expect(py).toContain('base_url=f"{base}/deepgram/v1/listen"');
    expect(`${gw.deepgram().baseUrl}/v1/listen`).toBe(at("/deepgram/v1/listen"));
  });
});
