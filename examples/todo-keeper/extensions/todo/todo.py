#!/usr/bin/env python3
"""A zot extension (protocol version 1): a todo list kept in the
extension's private data directory. Standard library only."""
import json
import os
import sys

DATA = None
CWD = None


def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def path():
    return os.path.join(DATA, "todos.json")


def load():
    try:
        with open(path()) as f:
            return json.load(f)
    except FileNotFoundError:
        return []


def save(items):
    tmp = path() + ".tmp"
    with open(tmp, "w") as f:
        json.dump(items, f)
    os.replace(tmp, path())


def text(s, error=False):
    return {"content": [{"type": "text", "text": s}], "is_error": error}


def listing(items):
    if not items:
        return "the list is empty"
    return "\n".join(f"{i + 1}. {t}" for i, t in enumerate(items))


def tool(name, args):
    items = load()
    if name == "todo_add":
        item = str(args.get("text", "")).strip()
        if not item:
            return text("missing `text`", True)
        items.append(item)
        save(items)
        return text(f"added #{len(items)}: {item}")
    if name == "todo_list":
        return text(listing(items))
    if name == "todo_export":
        # Written into the workspace: lands only where the agent may write.
        try:
            with open(os.path.join(CWD, "TODO.md"), "w") as f:
                f.write("# Todo\n\n" + "".join(f"- [ ] {t}\n" for t in items))
        except OSError as e:
            return text(f"cannot write TODO.md: {e}", True)
        return text(f"wrote {len(items)} item(s) to TODO.md")
    return text(f"unknown tool {name}", True)


def main():
    global DATA, CWD
    send({"type": "hello", "name": "todo", "version": "0.1.0", "capabilities": ["tools", "commands"]})
    for line in sys.stdin:
        msg = json.loads(line)
        t = msg.get("type")
        if t == "hello_ack":
            DATA, CWD = msg["data_dir"], msg["cwd"]
            send({"type": "register_tool", "name": "todo_add",
                  "description": "Add an item to the todo list.",
                  "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
            send({"type": "register_tool", "name": "todo_list",
                  "description": "The todo list, numbered.",
                  "schema": {"type": "object", "properties": {}}})
            send({"type": "register_tool", "name": "todo_export",
                  "description": "Write the todo list to TODO.md in the workspace.",
                  "schema": {"type": "object", "properties": {}}})
            send({"type": "register_command", "name": "todos", "description": "show the todo list"})
            send({"type": "subscribe", "events": ["session_start"], "intercept": []})
            send({"type": "ready"})
        elif t == "tool_call":
            send({"type": "tool_result", "id": msg["id"], **tool(msg["name"], msg.get("args") or {})})
        elif t == "command_invoked":
            send({"type": "command_response", "id": msg["id"], "action": "show", "text": listing(load())})
        elif t == "shutdown":
            send({"type": "shutdown_ack"})
            break


if __name__ == "__main__":
    main()
