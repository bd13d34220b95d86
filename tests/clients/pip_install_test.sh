#!/usr/bin/env bash
# clients/python installs offline with Debian's packages (python3-venv, python3-setuptools,
# python3-wheel) into a fresh virtual environment, and the installed package (not the source
# tree) provides the client and the reward functions.
# Usage: pip_install_test.sh PYTHON3 SOURCE_DIR SCRATCH_DIR
set -euo pipefail
python3=$1 source_dir=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
"$python3" -m venv --system-site-packages "$scratch/venv"
# pip builds in the folder it is given: a copy keeps build/ and *.egg-info out of the sources.
cp -r "$source_dir/clients/python" "$scratch/src"
"$scratch/venv/bin/pip" install --quiet --no-index --no-build-isolation "$scratch/src"
cd "$scratch"
"$scratch/venv/bin/python" - <<'PY'
import healthbench_env, healthbench_env.rewards as rewards
assert "/venv/" in healthbench_env.__file__, healthbench_env.__file__
assert callable(rewards.compute_score) and callable(rewards.trl_reward)
try:
    healthbench_env.HealthBenchEnv()
except ValueError as e:
    assert "HEALTHBENCH_ENV_URL" in str(e), e
else:
    raise AssertionError("HealthBenchEnv() without a URL must raise")
print("installed:", healthbench_env.__file__)
PY
