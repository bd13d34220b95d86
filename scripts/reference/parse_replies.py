#!/usr/bin/python3
"""Cross-check for hb::ParseGraderReply: the reference's grader-reply handling, in Python.

Re-implements (in our own words) simple-evals' HealthBench `parse_json_to_dict` and the
acceptance test of its grading loop (SPEC section 5.1): strip, drop a leading "```json" fence and
a trailing "```" fence with the same regular expression, json.loads, then accept only a dict
whose "criteria_met" is exactly True or False. Where the reference would crash (a top-level
number, string, list or bool) or recurse too deep, we report a rejection, as the C++ port does.

Usage: parse_replies.py IN.json OUT.json
  IN.json: a JSON array of reply strings.
  OUT.json: a JSON array, one object per reply: {"ok": false, "cleaned": str} or
            {"ok": true, "criteria_met": bool, "explanation": str, "cleaned": str}, where
            "cleaned" is the text after strip and fence removal. A non-string explanation
            is given as json.dumps(value, ensure_ascii=False, separators=(",", ":")).
Standard library only.
"""
import json
import re
import sys

_FENCES = re.compile(r"^```json\s*|\s*```$")
_NO_EXPLANATION = "No explanation provided"


def reference_parse(reply):
    """What the reference's parse_json_to_dict returns ({} on a decode error)."""
    cleaned = _FENCES.sub("", reply.strip())
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        return {}


def judge(reply):
    result = judge_value(reply)
    result["cleaned"] = _FENCES.sub("", reply.strip())
    return result


def judge_value(reply):
    try:
        value = reference_parse(reply)
    except RecursionError:
        return {"ok": False}
    if not isinstance(value, dict):
        return {"ok": False}
    if "criteria_met" not in value:
        return {"ok": False}
    label = value["criteria_met"]
    if label is not True and label is not False:
        return {"ok": False}
    explanation = value.get("explanation", _NO_EXPLANATION)
    if not isinstance(explanation, str):
        explanation = json.dumps(explanation, ensure_ascii=False, separators=(",", ":"))
    return {"ok": True, "criteria_met": label, "explanation": explanation}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        replies = json.load(f)
    results = [judge(reply) for reply in replies]
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
