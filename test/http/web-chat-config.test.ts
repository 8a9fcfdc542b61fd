/** When the web chat is on, whom it answers, and what its settings refuse (src/gateway/config/web.ts). */
import { describe, expect, test } from "bun:test";
import { loadConfig, webAccessFor } from "../../src/gateway/config/index.ts";
import { isLoopbackHost } from "../../src/gateway/http/web-guard.ts";

const TOKEN = "web-token-5f0c2a9e71d3";
const base = { SWITCHBOARD_DB: ":memory:" };

function load(env: Record<string, string>) {
  return loadConfig({ ...base, ...env });
}

function configError(env: Record<string, string>): string {
  try {
    load(env);
  } catch (error) {
    expect(error).toMatchObject({ code: "config_invalid" });
    return (error as Error).message;
  }
  throw new Error("expected a configuration error");
}

describe("exposure", () => {
  test("on loopback the web chat is on without a token", () => {
    for (const host of ["127.0.0.1", "localhost", "::1", "127.0.0.2"]) {
      const config = load({ SWITCHBOARD_HTTP_HOST: host });
      expect(config.web).toMatchObject({ enabled: true, token: null });
      expect(config.web.offReason).toBeUndefined();
    }
  });

  test("listening on another address without a token turns it off and says why", () => {
    for (const host of ["0.0.0.0", "::", "192.168.1.20"]) {
      const config = load({ SWITCHBOARD_HTTP_HOST: host });
      expect(config.web.enabled).toBe(false);
      expect(config.web.offReason).toContain(`SWITCHBOARD_HTTP_HOST=${host}`);
      expect(config.web.offReason).toContain("SWITCHBOARD_WEB_TOKEN");
    }
  });

  test("a non-loopback public URL needs the token too", () => {
    const config = load({ SWITCHBOARD_PUBLIC_URL: "https://chat.example.com/" });
    expect(config.http.publicUrl).toBe("https://chat.example.com");
    expect(config.web.enabled).toBe(false);
    expect(config.web.offReason).toContain("SWITCHBOARD_PUBLIC_URL=https://chat.example.com");
    expect(load({ SWITCHBOARD_PUBLIC_URL: "http://localhost:8787" }).web.enabled).toBe(true);
  });

  test("with a token it is on wherever it listens, and the token is a secret", () => {
    const config = load({ SWITCHBOARD_HTTP_HOST: "0.0.0.0", SWITCHBOARD_WEB_TOKEN: TOKEN });
    expect(config.web).toMatchObject({ enabled: true, token: TOKEN });
    expect(config.secrets).toContain(TOKEN);
  });

  test("SWITCHBOARD_WEB=on where others reach it without a token is refused; off is always off", () => {
    expect(configError({ SWITCHBOARD_HTTP_HOST: "0.0.0.0", SWITCHBOARD_WEB: "on" })).toContain(
      "SWITCHBOARD_WEB_TOKEN must be set for SWITCHBOARD_WEB=on because SWITCHBOARD_HTTP_HOST=0.0.0.0",
    );
    const off = load({ SWITCHBOARD_WEB: "off", SWITCHBOARD_WEB_TOKEN: TOKEN });
    expect(off.web.enabled).toBe(false);
    expect(off.web.offReason).toBeUndefined();
  });
});

describe("invalid settings name the variable", () => {
  test.each([
    [{ SWITCHBOARD_WEB_TOKEN: "short" }, "SWITCHBOARD_WEB_TOKEN must be at least 16 characters"],
    [{ SWITCHBOARD_WEB: "yes" }, 'SWITCHBOARD_WEB must be on or off (got "yes")'],
    [{ SWITCHBOARD_PUBLIC_URL: "chat.example.com" }, "SWITCHBOARD_PUBLIC_URL is not an http(s) URL"],
    [{ SWITCHBOARD_PUBLIC_URL: "https://chat.example.com/bot" }, "SWITCHBOARD_PUBLIC_URL must be an origin"],
    [{ SWITCHBOARD_PUBLIC_URL: "https://u:p@chat.example.com" }, "SWITCHBOARD_PUBLIC_URL must be an origin"],
    [
      { SWITCHBOARD_WEB_MESSAGES_PER_MINUTE: "0" },
      "SWITCHBOARD_WEB_MESSAGES_PER_MINUTE must be a whole number",
    ],
    [
      { SWITCHBOARD_WEB_REQUESTS_PER_MINUTE: "lots" },
      "SWITCHBOARD_WEB_REQUESTS_PER_MINUTE must be a whole number",
    ],
  ])("%p", (env, message) => {
    expect(configError(env)).toContain(message);
  });

  test("the rate limits default to 30 messages per session and 120 requests per address a minute", () => {
    expect(load({}).web).toMatchObject({ messagesPerSessionPerMinute: 30, requestsPerIpPerMinute: 120 });
    expect(
      load({ SWITCHBOARD_WEB_MESSAGES_PER_MINUTE: "5", SWITCHBOARD_WEB_REQUESTS_PER_MINUTE: "50" }).web,
    ).toMatchObject({ messagesPerSessionPerMinute: 5, requestsPerIpPerMinute: 50 });
  });
});

describe("allowed host names", () => {
  test("loopback names, the public URL's host, and a specific listen address", () => {
    const withPublic = webAccessFor(
      load({ SWITCHBOARD_PUBLIC_URL: "https://Chat.Example.com:8443", SWITCHBOARD_WEB_TOKEN: TOKEN }),
    );
    expect([...withPublic.allowedHosts].sort()).toEqual(
      ["127.0.0.1", "[::1]", "chat.example.com", "localhost"].sort(),
    );
    expect([...withPublic.allowedOrigins]).toEqual(["https://chat.example.com:8443"]);
    const lan = webAccessFor(load({ SWITCHBOARD_HTTP_HOST: "192.168.1.20", SWITCHBOARD_WEB_TOKEN: TOKEN }));
    expect(lan.allowedHosts.has("192.168.1.20")).toBe(true);
    const any = webAccessFor(load({ SWITCHBOARD_HTTP_HOST: "0.0.0.0", SWITCHBOARD_WEB_TOKEN: TOKEN }));
    expect(any.allowedHosts.has("0.0.0.0")).toBe(false);
  });

  test("isLoopbackHost", () => {
    for (const host of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
      expect(isLoopbackHost(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "localhost.example.com", "evil.localhost"])
      expect(isLoopbackHost(host)).toBe(false);
  });
});
