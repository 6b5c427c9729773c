import { fileURLToPath } from "node:url";
import { cli, defineAgent, type JobContext, ServerOptions, voice } from "@livekit/agents";
import { attach, voxgateGateway } from "voxgate/livekit"; // voxgate

export default defineAgent({
  entry: async (ctx: JobContext) => {
    const gw = voxgateGateway({ url: process.env.VOXGATE_URL ?? "", apiKey: process.env.VOXGATE_API_KEY ?? "", project: "support", sessionId: ctx.job.id }); // voxgate
    const session = new voice.AgentSession({
      stt: await gw.stt("deepgram/nova-3"), // voxgate
      llm: await gw.llm("openai/gpt-4.1-mini"), // voxgate
      tts: await gw.tts("cartesia/sonic-2:a0e99841-438c-4a64-b679-ae501e7d6091"), // voxgate
    });
    attach(session, { gateway: gw, roomName: ctx.job.room?.name, deadAirThresholdMs: 2000 }); // voxgate

    await session.start({ agent: new voice.Agent({ instructions: "You are a friendly voice assistant. Keep answers short." }), room: ctx.room });
    await ctx.connect();
    session.generateReply({ instructions: "Greet the caller and offer your help." });
  },
});

cli.runApp(new ServerOptions({ agent: fileURLToPath(import.meta.url) }));
