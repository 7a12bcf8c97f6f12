// The editor's files, driven by the official TypeScript client (@agentclientprotocol/sdk,
// pinned in package.json). Run by crates/cli/tests/suite/acp_editor.rs:
//
//   node editor.mjs <dsh binary> <workspace>   (env: DSH_ACP_NODE_MODULES, DSH_HOME, ...)
//
// The client advertises fs.readTextFile and fs.writeTextFile and serves buffer.txt from an
// unsaved in-memory buffer (the disk holds other text). One turn reads the file and edits
// it: the agent must have read the buffer, and the edit must arrive through the client
// (after the usual permission question). A second turn writes outside the workspace: the
// sandbox refuses it before the client is asked. The last stdout line is a JSON summary.
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

const bufferPath = join(cwd, "buffer.txt");
const buffers = new Map([[bufferPath, "unsaved line\nsecond line\n"]]);
const reads = [];
const writes = [];
const permissions = [];
const updates = [];

const child = spawn(dsh, ["acp", "--approval", "untrusted"], {
  cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const client = {
  async sessionUpdate(params) {
    updates.push(params.update);
  },
  async requestPermission(params) {
    permissions.push(params);
    return { outcome: { outcome: "selected", optionId: "allow-once" } };
  },
  async readTextFile(params) {
    reads.push(params);
    if (!buffers.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
    return { content: buffers.get(params.path) };
  },
  async writeTextFile(params) {
    writes.push(params);
    buffers.set(params.path, params.content);
    return {};
  },
};
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const connection = new acp.ClientSideConnection(() => client, stream);
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));

await connection.initialize({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
});
const { sessionId } = await connection.newSession({ cwd, mcpServers: [] });

// Turn 1: read and edit the unsaved buffer.
let result = await connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "EDIT-BUFFER please" }],
});
assert.equal(result.stopReason, "end_turn");
assert.deepEqual(reads.map((r) => [r.sessionId, r.path]), [
  [sessionId, bufferPath], // the read tool
  [sessionId, bufferPath], // the edit's read-before-edit guard
]);
assert.deepEqual(writes, [
  { sessionId, path: bufferPath, content: "edited line\nsecond line\n" },
]);
assert.equal(buffers.get(bufferPath), "edited line\nsecond line\n");
// The edit was asked about as usual, and the updates show it as usual.
assert.equal(permissions.length, 1);
assert.equal(permissions[0].toolCall.kind, "edit");
const read = updates.find((u) => u.sessionUpdate === "tool_call" && u.kind === "read");
const readDone = updates.find(
  (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === read.toolCallId,
);
assert.equal(readDone.status, "completed");
assert.match(JSON.stringify(readDone.content), /1: unsaved line/);
const edit = updates.find((u) => u.sessionUpdate === "tool_call" && u.kind === "edit");
const editDone = updates.find(
  (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === edit.toolCallId,
);
assert.equal(editDone.status, "completed");

// Turn 2: a write outside the workspace never reaches the client.
let mark = updates.length;
result = await connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "ESCAPE the workspace" }],
});
assert.equal(result.stopReason, "end_turn");
const refused = updates
  .slice(mark)
  .find((u) => u.sessionUpdate === "tool_call_update");
assert.equal(refused.status, "failed");
assert.equal(writes.length, 1, "the client was asked to write outside the sandbox");

child.stdin.end();
assert.equal(await exited, 0);
console.log(JSON.stringify({ sessionId, reads: reads.length, writes: writes.length }));
