#!/usr/bin/env python3
"""A minimal client of `dsh sdk` (the SDK JSON-RPC runtime), standard library only.

Starts `dsh sdk`, sends one prompt, prints the answer as it streams (from the
`session.event` notifications' `assistant/chunk` text deltas), and shuts the runtime down
once the session is idle again.

    python3 examples/sdk_client.py "What does this repository do?"
    python3 examples/sdk_client.py --session my-session "And then?"   # continue a session

Options: --dsh PATH (default: `dsh` on PATH), --cwd DIR (the workspace), --session ID (a
stored session id resumes that session; a new id starts one), --model NAME. Everything
after the options is the prompt. The session id is printed on stderr at the end.
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import uuid


class Runtime:
    """One `dsh sdk` process: requests out, responses and notifications in."""

    def __init__(self, command, cwd):
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.ids = itertools.count(1)

    def send(self, method, params):
        request_id = next(self.ids)
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(frame) + "\n")
        self.process.stdin.flush()
        return request_id

    def frames(self):
        for line in self.process.stdout:
            if line.strip():
                yield json.loads(line)

    def call(self, method, params, on_notification):
        """Sends a request; hands notifications to `on_notification` until its response."""
        request_id = self.send(method, params)
        for frame in self.frames():
            if frame.get("id") == request_id and "method" not in frame:
                if "error" in frame:
                    raise RuntimeError(f"{method}: {frame['error']['message']}")
                return frame["result"]
            on_notification(frame)
        raise RuntimeError(f"dsh sdk exited before answering {method}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsh", default="dsh")
    parser.add_argument("--cwd", default=os.getcwd())
    parser.add_argument("--session", default=f"sdk-{uuid.uuid4()}")
    parser.add_argument("--model")
    parser.add_argument("prompt", nargs="+")
    args = parser.parse_args()

    runtime = Runtime([args.dsh, "sdk"], args.cwd)
    state = {"running": False, "done": False}

    def on_notification(frame):
        params = frame.get("params", {})
        if params.get("sessionId") != args.session:
            return  # another session (a subagent's) or a subagent.* notice
        if frame["method"] == "session.event":
            event = params["event"]
            chunk = event["data"].get("chunk", {}) if event["type"] == "assistant/chunk" else {}
            if chunk.get("type") == "text-delta":
                print(chunk["text"], end="", flush=True)
        elif frame["method"] == "session.status":
            if params["status"] == "running":
                state["running"] = True
            elif state["running"]:
                state["done"] = True

    init = {"cwd": os.path.abspath(args.cwd)}
    if args.model:
        init["model"] = args.model
    runtime.call("initialize", init, on_notification)
    text = " ".join(args.prompt)
    blocks = [{"type": "text", "text": text}]
    runtime.call("session/prompt", {"sessionId": args.session, "contentBlocks": blocks}, on_notification)
    for frame in runtime.frames():
        on_notification(frame)
        if state["done"]:
            break
    print()
    runtime.call("shutdown", {}, lambda frame: None)
    runtime.process.wait()
    print(f"session: {args.session}", file=sys.stderr)
    return runtime.process.returncode


if __name__ == "__main__":
    sys.exit(main())
