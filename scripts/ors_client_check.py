#!/usr/bin/python3
"""Drive an hb-env ORS server with the unmodified Open Reward Standard Python client.

By hand, not in CI (see docs/environment.md, "Using it from Python"):
  apt-get install -y python3-aiohttp python3-structlog python3-tenacity python3-typing-extensions
  build/tests/environment/ors/ors_fake_server 8765 &     # or hb-env
  /usr/bin/python3 scripts/ors_client_check.py http://127.0.0.1:8765 /work/ors-sdk/src

The client's package root imports its FastAPI server, so this copies the SDK's src/ to a
scratch directory with an empty ors/__init__.py; Debian's typing_extensions 4.4 lacks
TypeAliasType, so a stand-in is set before importing. Prints each step and its result.
"""
import json
import shutil
import sys
import tempfile
import urllib.request

import typing_extensions

typing_extensions.TypeAliasType = lambda name, value, **kw: value


def import_client(sdk_src):
    scratch = tempfile.mkdtemp(prefix="ors-client-")
    shutil.copytree(sdk_src, scratch + "/src")
    open(scratch + "/src/ors/__init__.py", "w").close()
    sys.path.insert(0, scratch + "/src")
    from ors.client import ORS  # noqa: E402
    from ors.client._types import ToolCallError  # noqa: E402
    return ORS, ToolCallError


def main():
    base_url, sdk_src = sys.argv[1], sys.argv[2]
    ORS, ToolCallError = import_client(sdk_src)
    with urllib.request.urlopen(base_url + "/list_environments") as resp:
        print("list_environments:", json.load(resp))
    with ORS(base_url=base_url) as client:
        env = client.environment("healthbench")
        splits = env.list_splits()
        print("splits:", splits)
        split = splits[0]
        print("num_tasks(%s):" % split, env.num_tasks(split))
        tasks = env.list_tasks(split)
        print("list_tasks(%s):" % split, [t.task_spec for t in tasks])
        print("get_task(%s, -1):" % split, env.get_task(split, -1).task_spec)
        print("get_task_range(%s, 0, 1):" % split, [t.task_spec for t in env.get_task_range(split, 0, 1)])
        print("tools:", [(t.name, t.input_schema) for t in env.list_tools()])
        with env.session(task=tasks[0]) as session:
            print("session sid:", session.sid)
            print("prompt:", [b.text for b in session.get_prompt()])
            print("session tools:", [t.name for t in session.list_tools()])
            out = session.call_tool("answer", {"answer": "Call emergency services now."})
            print("answer -> reward:", out.reward, "finished:", out.finished)
            print("  blocks:", [b.text for b in out.blocks])
            print("  metadata:", json.dumps(out.metadata))
            try:
                session.call_tool("search", {"q": "x"})
            except ToolCallError as e:
                print("unknown tool -> ToolCallError:", e)
        with env.session(split=split, index=1) as session:
            out = session.call_tool("answer", {"answer": ""})
            print("empty answer (split/index session) -> reward:", out.reward)


if __name__ == "__main__":
    main()
