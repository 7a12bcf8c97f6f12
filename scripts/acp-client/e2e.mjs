// The ACP end-to-end scenario, driven by the official TypeScript client
// (@agentclientprotocol/sdk, pinned in package.json). Run by crates/cli/tests/suite/acp.rs:
//
//   node e2e.mjs <dsh binary> <workspace>   (env: DSH_ACP_NODE_MODULES, DSH_HOME, ...)
//
// It runs `dsh acp` twice. First connection: a tool-using turn whose write is allowed once,
// a turn whose write is rejected, and a long turn whose permission request is never answered
// until it is cancelled (a second prompt meanwhile is refused). Second connection: the
// session is loaded (its history replayed) and continued. Every assertion is here; the last
// stdout line is a JSON summary the Rust test checks against the session log.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const [dsh, cwd] = process.argv.slice(2);
const modules = process.env.DSH_ACP_NODE_MODULES;
const acp = await import(
  pathToFileURL(join(modules, "@agentclientprotocol/sdk/dist/acp.js")).href
);

/// One `dsh acp` process and a client recording everything it is sent.
function connect(onPermission) {
  const child = spawn(dsh, ["acp", "--approval", "untrusted"], {
    cwd,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const updates = [];
  const permissions = [];
  const client = {
    async sessionUpdate(params) {
      updates.push(params.update);
    },
    async requestPermission(params) {
      permissions.push(params);
      return onPermission(params, permissions.length);
    },
  };
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin),
    Readable.toWeb(child.stdout),
  );
  const connection = new acp.ClientSideConnection(() => client, stream);
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, connection, updates, permissions, exited };
}

const text = (updates, kind) =>
  updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => u.content.text)
    .join("");

// ---- first connection --------------------------------------------------------------
let first;
let cancelSent = false;
first = connect(async (params, n) => {
  if (n === 1) {
    return { outcome: { outcome: "selected", optionId: "allow-once" } };
  }
  if (n === 2) {
    return { outcome: { outcome: "selected", optionId: "reject-once" } };
  }
  // The third question is never answered: the test cancels the turn instead.
  cancelSent = true;
  return new Promise(() => {});
});
const init = await first.connection.initialize({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: {},
});
assert.equal(init.protocolVersion, 1);
assert.equal(init.agentCapabilities.loadSession, true);
const { sessionId } = await first.connection.newSession({ cwd, mcpServers: [] });
assert.match(sessionId, /^session-/);

// Turn 1: a plan, then a write the client allows once.
let mark = first.updates.length;
let result = await first.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "PLAN-AND-WRITE the note" }],
});
assert.equal(result.stopReason, "end_turn");
const turn1 = first.updates.slice(mark);
assert.equal(text(turn1, "agent_thought_chunk"), "Let me plan this first.");
assert.equal(text(turn1, "agent_message_chunk"), "I will plan and write.Done writing.");
assert.ok(turn1.filter((u) => u.sessionUpdate === "agent_message_chunk").length >= 4);
const plan = turn1.find((u) => u.sessionUpdate === "plan");
assert.deepEqual(plan.entries, [
  { content: "write the note", priority: "medium", status: "in_progress" },
]);
const call = turn1.find((u) => u.sessionUpdate === "tool_call" && u.kind === "edit");
assert.equal(call.title, "Write note.txt");
assert.equal(call.status, "pending");
assert.deepEqual(call.locations, [{ path: join(cwd, "note.txt") }]);
assert.deepEqual(call.content, [
  { type: "diff", path: join(cwd, "note.txt"), oldText: null, newText: "hello\n" },
]);
const done = turn1.findIndex(
  (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId,
);
assert.ok(done > turn1.indexOf(call), "the tool call's update follows it");
assert.equal(turn1[done].status, "completed");
const asked = first.permissions[0];
assert.equal(asked.sessionId, sessionId);
assert.equal(asked.toolCall.toolCallId, call.toolCallId);
assert.equal(asked.toolCall.title, "Write note.txt");
assert.equal(asked.toolCall.kind, "edit");
assert.deepEqual(asked.toolCall.rawInput, { file_path: "note.txt", content: "hello\n" });
assert.deepEqual(
  asked.options.map((o) => [o.optionId, o.kind]),
  [
    ["allow-once", "allow_once"],
    ["allow-always", "allow_always"],
    ["reject-once", "reject_once"],
  ],
);

// Turn 2: the write is rejected; the call fails and the model is told.
mark = first.updates.length;
result = await first.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "REJECT this write" }],
});
assert.equal(result.stopReason, "end_turn");
const turn2 = first.updates.slice(mark);
const refused = turn2.find((u) => u.sessionUpdate === "tool_call_update");
assert.equal(refused.status, "failed");
assert.equal(text(turn2, "agent_message_chunk"), "Okay, not written.");

// Turn 3: a command waits for a permission nobody gives; a second prompt is refused while
// it waits, and cancel releases it.
const long = first.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "LONG command" }],
});
while (!cancelSent) await new Promise((r) => setTimeout(r, 20));
await assert.rejects(
  first.connection.prompt({ sessionId, prompt: [{ type: "text", text: "again" }] }),
  (e) => e.code === -32602 && e.message === "Invalid params: a prompt is already in flight for this session",
);
await first.connection.cancel({ sessionId });
result = await long;
assert.equal(result.stopReason, "cancelled");
first.child.stdin.end();
assert.equal(await first.exited, 0);

// ---- second connection: load and continue ------------------------------------------
const second = connect(async () => ({ outcome: { outcome: "cancelled" } }));
await second.connection.initialize({ protocolVersion: 1, clientCapabilities: {} });
await second.connection.loadSession({ sessionId, cwd, mcpServers: [] });
const replay = second.updates.slice();
assert.deepEqual(
  replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text),
  ["PLAN-AND-WRITE the note", "REJECT this write", "LONG command"],
);
assert.equal(
  text(replay, "agent_message_chunk"),
  "I will plan and write.Done writing.Okay, not written.",
);
assert.ok(replay.some((u) => u.sessionUpdate === "plan"));
assert.ok(replay.some((u) => u.sessionUpdate === "tool_call" && u.title === "Write note.txt"));
mark = second.updates.length;
result = await second.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "AGAIN please" }],
});
assert.equal(result.stopReason, "end_turn");
assert.equal(text(second.updates.slice(mark), "agent_message_chunk"), "Continued.");
second.child.stdin.end();
assert.equal(await second.exited, 0);

console.log(
  JSON.stringify({
    sessionId,
    turn1: turn1.map((u) => u.sessionUpdate),
    replay: replay.map((u) => u.sessionUpdate),
  }),
);
