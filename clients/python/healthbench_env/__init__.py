"""healthbench_env: Python client of hb-env (HealthBench rewards) and reward functions for
verl (healthbench_env.rewards.compute_score) and TRL (healthbench_env.rewards.trl_reward).

    from healthbench_env import HealthBenchEnv
    env = HealthBenchEnv()          # $HEALTHBENCH_ENV_URL, $HEALTHBENCH_ENV_TOKEN
    task = env.list_tasks("test")[0]
    result = env.submit(task.task_id, "Call emergency services now.")
    print(result.reward)
"""

from healthbench_env.client import (AuthenticationError, GradingError, HealthBenchEnv,
                                    HealthBenchEnvError, RequestError, ServerError,
                                    SubmitResult, Task, TaskPrompt)

__all__ = [
    "HealthBenchEnv",
    "HealthBenchEnvError",
    "GradingError",
    "AuthenticationError",
    "RequestError",
    "ServerError",
    "SubmitResult",
    "Task",
    "TaskPrompt",
]
