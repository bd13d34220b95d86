#!/usr/bin/python3
"""The dependency rule of the production code, read from its #include lines.

Top-level folders form layers; a file may include its own folder and any folder of a LOWER
layer, never one of its own layer or above (so there is no cycle, and no upward edge):

    common, protos  <  security, http  <  llm  <  grader  <  grader_client  <  cli
                    <  grader_service, environment, orchestrator, simulator

Inside common/, environment/ and orchestrator/ the rooms (subfolders) are layered the same way:

    common/:        base  <  retry  <  sqlite, flow, rpc, quota  <  healthbench  <  grading
    environment/:   logic  <  store  <  ors  <  grpc, http  <  environment/main.cc
    orchestrator/:  report  <  policy  <  sample, run, watch  <  commands  <  orchestrator/main.cc

environment/'s logic and store are files in the folder itself: a `*_store.h/.cc` is the store,
main.cc is main, any other file is logic.

A new room fails the test until it is given a rank in ROOMS.

Usage: layering_test.py [SOURCE_DIR]   (unittest; SOURCE_DIR defaults to the repository root)
"""
import os
import re
import sys
import tempfile
import unittest

LAYERS = [
    ["common", "protos"],
    ["security", "http"],
    ["llm"],
    ["grader"],
    ["grader_client"],
    ["cli"],
    ["grader_service", "environment", "orchestrator", "simulator"],
]
ROOMS = {
    "common": [["base"], ["retry"], ["sqlite", "flow", "rpc", "quota"], ["healthbench"],
               ["grading"]],
    "environment": [["logic"], ["store"], ["ors"], ["grpc", "http"], ["main.cc"]],
    "orchestrator": [["report"], ["policy"], ["sample", "run", "watch"], ["commands"], ["main.cc"]],
}
STORE_FILE = re.compile(r"_store\.(h|cc)$")
# Not production code: tests, tools and generated trees.
SKIPPED = {"tests", "bench", "fuzz", "scripts", "examples", "deploy", "clients", "cmake"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rank_of(name, layers):
    for rank, names in enumerate(layers):
        if name in names:
            return rank
    return None


def unit_of(path):
    """(folder, room) of a repository-relative path; room only inside a folder with ROOMS."""
    parts = path.split("/")
    room = None
    if parts[0] in ROOMS and len(parts) > 1:
        room = parts[1]
        if parts[0] == "environment" and len(parts) == 2 and room != "main.cc":
            room = "store" if STORE_FILE.search(room) else "logic"
    return parts[0], room


def production_files(root):
    for folder in sorted(os.listdir(root)):
        top = os.path.join(root, folder)
        if not os.path.isdir(top) or folder.startswith((".", "build")) or folder in SKIPPED:
            continue
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if name.endswith((".h", ".cc")):
                    full = os.path.join(dirpath, name)
                    yield os.path.relpath(full, root), full


def violations(root):
    """Every include that breaks the rule, as readable lines."""
    out = []
    for rel, full in production_files(root):
        folder, room = unit_of(rel)
        own = rank_of(folder, LAYERS)
        if own is None:
            out.append(f"{rel}: folder '{folder}' has no layer: add it to LAYERS in "
                       "tests/architecture/layering_test.py (and to the README's layering)")
            continue
        with open(full, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for line_no, target in _includes(text):
            to_folder, to_room = unit_of(target)
            to = rank_of(to_folder, LAYERS)
            if to is None:
                continue  # a third-party or generated header
            where = f"{rel}:{line_no}: includes \"{target}\""
            if to_folder != folder and to >= own:
                out.append(f"{where}: {folder}/ may include only lower layers, and "
                           f"{to_folder}/ is not below it")
            elif folder == to_folder and folder in ROOMS and room != to_room:
                a, b = rank_of(room, ROOMS[folder]), rank_of(to_room, ROOMS[folder])
                if a is None or b is None or b >= a:
                    out.append(f"{where}: {folder}/{room} may include only lower rooms, and "
                               f"{folder}/{to_room} is not below it")
    return out


def _includes(text):
    for match in INCLUDE.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1)


class LayeringTest(unittest.TestCase):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def test_production_code_follows_the_layers(self):
        found = violations(self.root)
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def _tree(self, files):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        for rel, text in files.items():
            path = os.path.join(tmp.name, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return tmp.name

    def test_an_upward_edge_is_reported_with_file_and_line(self):
        root = self._tree({"llm/a.h": '#pragma once\n#include "grader/grader.h"\n',
                           "grader/grader.h": '#include "llm/a.h"\n'})
        self.assertEqual(violations(root), [
            'llm/a.h:2: includes "grader/grader.h": llm/ may include only lower layers, and '
            "grader/ is not below it"])

    def test_a_sideways_edge_and_a_room_cycle_are_reported(self):
        root = self._tree({
            "environment/e.cc": '#include "orchestrator/run/x.h"\n',
            "orchestrator/run/x.h": '#include "orchestrator/report/r.h"\n',
            "orchestrator/report/r.h": '#include "orchestrator/run/x.h"\n'})
        found = violations(root)
        self.assertEqual(len(found), 2, found)
        self.assertIn("environment/e.cc:1", found[0])
        self.assertIn("orchestrator/report/r.h:1", found[1])

    def test_rooms_inside_common_are_layered(self):
        root = self._tree({
            "common/base/clock.h": '#include "common/grading/scoring.h"\n',
            "common/flow/q.h": '#include "common/retry/retry_policy.h"\n'
                               '#include "common/rpc/status.h"\n',
            "common/grading/scoring.h": '#include "common/healthbench/dataset.h"\n',
            "common/healthbench/dataset.h": '#include "common/base/json.h"\n'})
        self.assertEqual(sorted(violations(root)), [
            'common/base/clock.h:1: includes "common/grading/scoring.h": common/base may include '
            "only lower rooms, and common/grading is not below it",
            'common/flow/q.h:2: includes "common/rpc/status.h": common/flow may include only '
            "lower rooms, and common/rpc is not below it"])

    def test_rooms_inside_environment_are_layered(self):
        root = self._tree({
            "environment/result_cache.h": '#include "environment/x_store.h"\n',
            "environment/x_store.h": '#include "environment/environment.h"\n'
                                     '#include "environment/ors/ors_api.h"\n',
            "environment/grpc/env_service.h": '#include "environment/x_store.h"\n',
            "environment/ors/ors_api.h": '#include "environment/grpc/env_service.h"\n',
            "environment/main.cc": '#include "environment/ors/ors_api.h"\n'})
        self.assertEqual(sorted(violations(root)), [
            'environment/ors/ors_api.h:1: includes "environment/grpc/env_service.h": '
            "environment/ors may include only lower rooms, and environment/grpc is not below it",
            'environment/result_cache.h:1: includes "environment/x_store.h": environment/logic '
            "may include only lower rooms, and environment/store is not below it",
            'environment/x_store.h:2: includes "environment/ors/ors_api.h": environment/store '
            "may include only lower rooms, and environment/ors is not below it"])

    def test_the_real_tree_fails_with_a_planted_upward_include(self):
        # The rule applied to a copy of this tree's common/ and environment/, which passes, and
        # then to the same copy with one upward include planted in each.
        planted = {}
        for rel, full in production_files(self.root):
            if rel.startswith(("common/", "environment/")):
                with open(full, encoding="utf-8", errors="replace") as f:
                    planted[rel] = f.read()
        self.assertIn("common/base/clock.h", planted)
        self.assertIn("environment/environment.h", planted)
        self.assertEqual(violations(self._tree(planted)), [])
        planted["common/base/clock.h"] += '#include "common/sqlite/database.h"\n'
        planted["environment/environment.h"] += '#include "environment/grpc/env_service.h"\n'
        found = violations(self._tree(planted))
        self.assertEqual(len(found), 2, found)
        self.assertIn("common/base/clock.h", found[0])
        self.assertIn("common/sqlite is not below it", found[0])
        self.assertIn("environment/environment.h", found[1])
        self.assertIn("environment/grpc is not below it", found[1])

    def test_an_unknown_folder_is_reported(self):
        root = self._tree({"newthing/a.h": "\n"})
        self.assertIn("has no layer", violations(root)[0])

    def test_an_unknown_room_is_reported(self):
        root = self._tree({"common/newroom/a.h": '#include "common/base/json.h"\n',
                           "common/base/b.h": '#include "common/newroom/a.h"\n'})
        found = violations(root)
        self.assertEqual(len(found), 2, found)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        LayeringTest.root = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
