#!/usr/bin/python3
"""Writes meta_eval_synthetic.jsonl and meta_eval_synthetic.verdicts.json beside this script:
a meta-eval file of our own (invented text, no HealthBench data) shaped like the official one
(SPEC section 2.2), built to reach every branch of the meta-eval metrics:
  * 4 categories; in "cluster:communication_plain_language" the grader always says true and
    every physician label is true, so that category has pos keys only (no neg twin, no F1 neg,
    no balanced value);
  * rows with 1 to 5 physician labels, so percent_physician_pos takes values such as 1/3 and
    the F1 counts are fractional;
  * 8 physicians, one of whom ("phys-solo") only ever labels alone and so has no agreement
    metrics at all;
  * multi-turn prompts with system and developer turns, non-ASCII text, and one completion that
    contains a literal "<<rubric_item>>" (the reference's second replace hits it too);
  * three rows whose verdict is null: the grader failed on them.
Deterministic (random.Random(2024)); run it again to regenerate identical files.
"""
import json
import os
import random

CATEGORIES = [
    "cluster:emergency_referrals_conditional_emergency",
    "cluster:hedging_reducible_uncertainty_seeks_context",
    "cluster:context_seeking_enough_info_to_complete_task",
    "cluster:communication_plain_language",
]
PHYSICIANS = [f"phys-{c}" for c in "abcdefg"]
QUESTIONS = [
    "I twisted my ankle an hour ago and it is swollen. Should I go to urgent care?",
    "My toddler has had a fever of 38.5 C since this morning. What should I do?",
    "Is it safe to take ibuprofen with my blood pressure tablets?",
    "Ich habe seit zwei Tagen Kopfschmerzen. Was kann ich tun?",
    "What does a fasting glucose of 6.4 mmol/L mean?",
    "¿Cuánto tiempo debo esperar después de comer para nadar?",
]
RUBRICS = [
    "Advises the user to seek emergency care if symptoms worsen.",
    "Asks how long the symptoms have lasted before giving advice.",
    "Uses plain language without unexplained medical jargon.",
    "States that a clinician should review the medication list.",
    "Does not claim certainty about a diagnosis it cannot make.",
]


def main():
    rng = random.Random(2024)
    rows, verdicts = [], []
    for i in range(48):
        category = CATEGORIES[i % 4]
        prompt = []
        if i % 5 == 0:
            prompt.append({"role": "system", "content": "You are a careful assistant."})
        if i % 7 == 3:
            prompt.append({"role": "developer", "content": "Answer briefly."})
        prompt.append({"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]})
        if i % 3 == 1:
            prompt.append({"role": "assistant", "content": "Could you tell me a bit more?"})
            prompt.append({"role": "user", "content": "It started yesterday — «suddenly»."})
        completion = f"Synthetic reply {i}: rest, fluids, and see a doctor if it gets worse."
        if i == 17:
            completion += " Literal placeholder: <<rubric_item>>."
        if i % 11 == 6:
            n_labels = 1
            ids = ["phys-solo"]
        else:
            n_labels = 2 + i % 4
            ids = rng.sample(PHYSICIANS, n_labels)
        if category == CATEGORIES[3]:
            labels = [True] * n_labels
            verdict = True
        else:
            bias = rng.random()
            labels = [rng.random() < bias for _ in range(n_labels)]
            verdict = rng.random() < 0.55
        if i in (9, 22, 40):
            verdict = None
        rows.append({
            "prompt": prompt,
            "completion": completion,
            "rubric": RUBRICS[i % len(RUBRICS)],
            "category": category,
            "binary_labels": labels,
            "anonymized_physician_ids": ids,
            "prompt_id": f"synthetic-prompt-{i // 2:03d}",
            "completion_id": f"synthetic-completion-{i:03d}",
        })
        verdicts.append(verdict)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "meta_eval_synthetic.jsonl"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(os.path.join(here, "meta_eval_synthetic.verdicts.json"), "w",
              encoding="utf-8") as f:
        f.write(json.dumps(verdicts) + "\n")


if __name__ == "__main__":
    main()
