import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { LIVEKIT_ENV } from "../support/fixtures.js";
import { bodyHash, countOf, craftJwt, exampleEvents, LK_KEY, LK_SECRET, postWebhook, signBody } from "./support.js";

/** Every way a webhook token can be wrong is a 401 that writes nothing (verified before parsing). */
describe("webhook signature verification", () => {
  const ev = exampleEvents("RM_sig", "call-sig");
  const body = JSON.stringify(ev.roomStarted);
  const now = () => Math.floor(Date.now() / 1000);

  const t = useTestApp({ env: LIVEKIT_ENV });

  const expectRejected = async (res: Response) => {
    expect(res.status).toBe(401);
    const err = ((await res.json()) as { error: { code: string; message: string } }).error;
    expect(err.code).toBe("unauthorized");
    expect(err.message).not.toContain(LK_SECRET);
    expect(await countOf(t, "calls")).toBe(0);
    expect(await countOf(t, "call_events")).toBe(0);
  };

  const send = (token: string | undefined, raw: string | Uint8Array = body) =>
    t.call("POST", "/v1/livekit/webhook", {
      raw,
      headers: { "content-type": "application/webhook+json", ...(token === undefined ? {} : { authorization: token }) },
    });

  it("refuses a missing Authorization header", async () => {
    await expectRejected(await send(undefined));
    await expectRejected(await send(""));
  });

  it("refuses a Bearer-prefixed token (LiveKit sends the bare JWT)", async () => {
    await expectRejected(await send(`Bearer ${await signBody(body)}`));
  });

  it("refuses a token signed with another secret (forged)", async () => {
    await expectRejected(await send(await signBody(body, LK_KEY, "not-the-secret-0123456789abcdefghij")));
  });

  it("refuses a token issued for another API key", async () => {
    await expectRejected(await send(await signBody(body, "APIsomeoneElse", LK_SECRET)));
  });

  it("refuses a body tampered with after signing", async () => {
    const token = await signBody(body);
    await expectRejected(await send(token, body.replace("call-sig", "call-evil")));
    await expectRejected(await send(token, `${body} `));
  });

  it("refuses an expired token (replay beyond the event id)", async () => {
    const claims = { iss: LK_KEY, sub: "", nbf: now() - 600, exp: now() - 60, sha256: bodyHash(body) };
    await expectRejected(await send(craftJwt({ alg: "HS256", typ: "JWT" }, claims, LK_SECRET, "sha256")));
  });

  it("refuses a token without exp, or not valid yet", async () => {
    await expectRejected(await send(craftJwt({ alg: "HS256" }, { iss: LK_KEY, sha256: bodyHash(body) }, LK_SECRET, "sha256")));
    const future = { iss: LK_KEY, nbf: now() + 3600, exp: now() + 7200, sha256: bodyHash(body) };
    await expectRejected(await send(craftJwt({ alg: "HS256" }, future, LK_SECRET, "sha256")));
  });

  it("refuses alg none and HS512 (HS256 is pinned), even correctly keyed", async () => {
    const claims = { iss: LK_KEY, nbf: now() - 5, exp: now() + 300, sha256: bodyHash(body) };
    await expectRejected(await send(craftJwt({ alg: "none", typ: "JWT" }, claims, LK_SECRET, "none")));
    await expectRejected(await send(craftJwt({ alg: "HS512", typ: "JWT" }, claims, LK_SECRET, "sha512")));
    await expectRejected(await send(craftJwt({ alg: "HS256", typ: "JWT" }, claims, LK_SECRET, "sha512")));
  });

  it("refuses a sha256 claim in the wrong form (hex or URL-safe base64, or missing)", async () => {
    const hex = craftJwt({ alg: "HS256" }, { iss: LK_KEY, exp: now() + 300, sha256: "00".repeat(32) }, LK_SECRET, "sha256");
    await expectRejected(await send(hex));
    const missing = craftJwt({ alg: "HS256" }, { iss: LK_KEY, exp: now() + 300 }, LK_SECRET, "sha256");
    await expectRejected(await send(missing));
    const urlSafe = bodyHash(body).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
    if (urlSafe !== bodyHash(body)) {
      await expectRejected(await send(craftJwt({ alg: "HS256" }, { iss: LK_KEY, exp: now() + 300, sha256: urlSafe }, LK_SECRET, "sha256")));
    }
  });

  it("refuses garbage tokens", async () => {
    for (const token of ["x", "a.b", "a.b.c.d", "....", "é.é.é", "x".repeat(20_000), "eyJhbGciOiJIUzI1NiJ9.e30.", "%%%.%%%.%%%"]) {
      await expectRejected(await send(token));
    }
  });

  it("accepts the same body correctly signed (the control)", async () => {
    const res = await postWebhook(t, ev.roomStarted, { raw: body });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", result: "recorded", id: ev.roomStarted.id, event: "room_started" });
  });
});
