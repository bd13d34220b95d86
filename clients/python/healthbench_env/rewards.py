"""Reward functions for trainers that take a Python callable, backed by hb-env.

Both use one shared HealthBenchEnv built from $HEALTHBENCH_ENV_URL and $HEALTHBENCH_ENV_TOKEN
on first use (set_default_env() replaces it). Neither ever turns a failed grading into a
reward: verl's compute_score raises, TRL's trl_reward answers None (TRL's "no reward").

verl (custom_reward_function: path = this file or the installed module's file, name =
compute_score): the dataset's reward_model.ground_truth is the HealthBench prompt_id, or
"SPLIT/<prompt_id>" (make_dataset.py --split) when hb-env serves splits that share prompt_ids.

    compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float

TRL GRPO (reward_funcs=[trl_reward]): the dataset has a "prompt_id" column; TRL passes every
column as a keyword list, plus its own keywords (trainer_state, log_metric, ...), ignored here.

    trl_reward(prompts, completions, prompt_id, **kwargs) -> list[float | None]

compute_score_async and trl_reward_async are the same as coroutines (verl's reward loop and
TRL both await coroutine reward functions).
"""

import threading
from typing import Any, List, Optional, Sequence

from healthbench_env.client import GradingError, HealthBenchEnv, HealthBenchEnvError, ServerError

__all__ = ["compute_score", "compute_score_async", "trl_reward", "trl_reward_async",
           "completion_text", "set_default_env", "default_env"]

_lock = threading.Lock()
_env: Optional[HealthBenchEnv] = None


def set_default_env(env: Optional[HealthBenchEnv]) -> None:
    """Uses `env` for compute_score and trl_reward (None: rebuild from the environment)."""
    global _env
    with _lock:
        _env = env


def default_env() -> HealthBenchEnv:
    global _env
    with _lock:
        if _env is None:
            _env = HealthBenchEnv()
        return _env


def _check_task_id(ground_truth: Any) -> None:
    if not isinstance(ground_truth, str) or not ground_truth:
        raise ValueError("compute_score: reward_model.ground_truth must be the HealthBench "
                         "prompt_id of the row (a non-empty string), got %r" % (ground_truth,))


def _pick(result, clipped: bool) -> float:
    return result.reward_clipped if clipped else result.reward


def compute_score(data_source: Any, solution_str: str, ground_truth: Any,
                  extra_info: Optional[dict] = None, *, clipped: bool = False,
                  **kwargs: Any) -> float:
    """verl's custom reward function: the reward of `solution_str` for task `ground_truth`.

    clipped=True (custom_reward_function.reward_kwargs) returns the reward clipped to [0, 1].
    Raises GradingError when hb-env could not grade the reply, ServerError when hb-env kept
    failing, AuthenticationError / RequestError (e.g. an unknown task id) otherwise: never a
    silent 0. Other keyword arguments verl passes are ignored.
    """
    del data_source, extra_info, kwargs
    _check_task_id(ground_truth)
    return _pick(default_env().submit(ground_truth, solution_str), clipped)


async def compute_score_async(data_source: Any, solution_str: str, ground_truth: Any,
                              extra_info: Optional[dict] = None, *, clipped: bool = False,
                              **kwargs: Any) -> float:
    """compute_score as a coroutine (verl awaits coroutine reward functions in its reward
    loop instead of running them on a thread). Same arguments, result and errors."""
    del data_source, extra_info, kwargs
    _check_task_id(ground_truth)
    return _pick(await default_env().asubmit(ground_truth, solution_str), clipped)


def completion_text(completion: Any) -> str:
    """The reply in a TRL completion: a string, or a list of chat messages (the last
    assistant message's content; content given as parts joins their "text")."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, (list, tuple)):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                content = message.get("content")
                if content is None:
                    return ""
                if isinstance(content, str):
                    return content
                return "".join(part.get("text", "") for part in content
                               if isinstance(part, dict) and part.get("type", "text") == "text")
        return ""
    raise TypeError("a completion must be a string or a list of chat messages, got %s"
                    % type(completion).__name__)


def trl_reward(prompts: Sequence[Any], completions: Sequence[Any], prompt_id: Sequence[str],
               *, clipped: bool = False, **kwargs: Any) -> List[Optional[float]]:
    """TRL GRPO reward function: one reward per completion, None for one that could not be
    graded (GradingError, or ServerError after the retries). A misconfiguration (no or wrong
    token, unknown prompt_id) raises instead: it would make every reward None."""
    del prompts, kwargs
    results = default_env().submit_batch(_submissions(completions, prompt_id),
                                         return_exceptions=True)
    return _rewards_or_none(results, clipped)


async def trl_reward_async(prompts: Sequence[Any], completions: Sequence[Any],
                           prompt_id: Sequence[str], *, clipped: bool = False,
                           **kwargs: Any) -> List[Optional[float]]:
    """trl_reward as a coroutine: TRL gathers coroutine reward functions on its event loop, so
    the grading overlaps the other async reward functions. Same arguments and result."""
    del prompts, kwargs
    results = await default_env().asubmit_batch(_submissions(completions, prompt_id),
                                                return_exceptions=True)
    return _rewards_or_none(results, clipped)


def _submissions(completions: Sequence[Any], prompt_id: Sequence[str]):
    if len(prompt_id) != len(completions):
        raise ValueError("trl_reward: %d completions but %d prompt_id values (the dataset needs "
                         "a prompt_id column)" % (len(completions), len(prompt_id)))
    return [(task_id, completion_text(c)) for task_id, c in zip(prompt_id, completions)]


def _rewards_or_none(results, clipped: bool) -> List[Optional[float]]:
    rewards: List[Optional[float]] = []
    for result in results:
        if isinstance(result, (GradingError, ServerError)):
            rewards.append(None)
        elif isinstance(result, HealthBenchEnvError):
            raise result
        else:
            rewards.append(_pick(result, clipped))
    return rewards
